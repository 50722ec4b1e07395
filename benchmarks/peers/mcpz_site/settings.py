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
    "django_mcpz",
    "django_mcpz.bearer_tokens",
]
MIDDLEWARE = list(MIDDLEWARE)
ROOT_URLCONF = "benchmarks.peers.mcpz_site.urls"
DATABASES = {"default": database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "loggers": {"django_mcpz": {"level": "WARNING"}},
}
