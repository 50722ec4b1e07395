"""Settings of the ceiling project: the reference project's middleware, no DB."""

from __future__ import annotations

import os

SECRET_KEY = os.environ.get("SECRET_KEY", "benchmark-ceiling-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
]
# The same stack as config.settings, so the ceiling pays what the gateway
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
ROOT_URLCONF = "benchmarks.ceiling.urls"
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True
