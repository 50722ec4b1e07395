# --- added by the host-site suite: the gateway, as the README says --------
import os

INSTALLED_APPS += [
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "engines_app",
    "mcp_gateway",
    "accounts",
    "tools",
]
AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "mcp_gateway.backends.ApiTokenBackend",
    "mcp_gateway.oauth.backend.OAuthBackend",
]
MCP_GATEWAY = {
    "PUBLIC_BASE_URL": os.environ.get("SITE_PUBLIC_BASE_URL", "http://127.0.0.1:8000"),
}
DEBUG = os.environ.get("SITE_DEBUG", "0") == "1"
if "MAILERS" in globals():  # Django 6.1 startproject: a console mailer
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend"}}
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
DEFAULT_AUTO_FIELD = os.environ.get("SITE_AUTO_FIELD", "django.db.models.BigAutoField")
