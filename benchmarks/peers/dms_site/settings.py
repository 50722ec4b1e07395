from __future__ import annotations

import os

from benchmarks.peers.common import MIDDLEWARE, database

SECRET_KEY = os.environ.get("SECRET_KEY", "benchmark-peer-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "rest_framework",
    "mcp_server",
]
MIDDLEWARE = list(MIDDLEWARE)
ROOT_URLCONF = "benchmarks.peers.dms_site.urls"
DATABASES = {"default": database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
DJANGO_MCP_GET_SERVER_INSTRUCTIONS_TOOL = False
DJANGO_MCP_GLOBAL_SERVER_CONFIG = {"stateless": True}
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
}
