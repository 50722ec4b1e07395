from __future__ import annotations

from benchmarks.peers.common import *  # noqa: F403

INSTALLED_APPS = [
    *DJANGO_APPS,  # noqa: F405
    "rest_framework",
    "mcp_server",
]
ROOT_URLCONF = "benchmarks.peers.dms_site.urls"
DATABASES = {"default": database()}  # noqa: F405
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DJANGO_MCP_GET_SERVER_INSTRUCTIONS_TOOL = False
DJANGO_MCP_GLOBAL_SERVER_CONFIG = {"stateless": True}
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
}
