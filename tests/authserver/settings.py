"""Settings of the django-oauth-toolkit authorization server of the tests.

A separate Django project in a separate process: its own SQLite file
(``AUTHSERVER_DB``), its own users and applications.
"""

from __future__ import annotations

import os

SECRET_KEY = "authserver-tests-only-secret-key-0123456789abcdef"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "oauth2_provider",
]
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "tests.authserver.urls"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("AUTHSERVER_DB", "authserver.sqlite3"),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
OAUTH2_PROVIDER = {
    "SCOPES": {
        "mcp:tools": "Use MCP tools",
        "mcp:tools:read": "Use read-only MCP tools",
        "introspection": "Introspect tokens",
    },
    "DEFAULT_SCOPES": ["mcp:tools"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": 300,
    "PKCE_REQUIRED": True,
}
