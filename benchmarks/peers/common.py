"""What the benchmark's Django sites (the ceiling and the peers) share.

The basics, the reference project's middleware stack (copied: the peers'
virtualenvs cannot import ``config.settings``), and the database from
``DATABASE_URL``. Each site's settings start with ``from … import *``.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

__all__ = [
    "ALLOWED_HOSTS",
    "DEBUG",
    "DJANGO_APPS",
    "MIDDLEWARE",
    "SECRET_KEY",
    "USE_TZ",
    "database",
]

SECRET_KEY = os.environ.get("SECRET_KEY", "benchmark-site-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
DJANGO_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
]
# The same stack as config.settings, so every site pays what the gateway
# pays for Django itself.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]


def database() -> dict[str, object]:
    """A Django DATABASES entry for ``sqlite:///path`` or ``postgres://…``."""
    url = urlsplit(os.environ.get("DATABASE_URL", "sqlite:///:memory:"))
    # The same persistent connections (and, on PostgreSQL, prepared
    # statements) the gateway gets from the reference project's settings.
    if url.scheme == "sqlite":
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": url.path[1:],
            "CONN_MAX_AGE": 600,
        }
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": url.path.lstrip("/"),
        "USER": url.username or "postgres",
        "HOST": url.hostname or "127.0.0.1",
        "PORT": url.port or 5432,
        "CONN_MAX_AGE": 600,
        # The prepared statements the reference project turns on.
        "OPTIONS": {"server_side_binding": True, "prepare_threshold": 5},
    }
