from __future__ import annotations

from benchmarks.peers.common import *  # noqa: F403

INSTALLED_APPS = [
    *DJANGO_APPS,  # noqa: F405
    "django_mcpz",
    "django_mcpz.bearer_tokens",
]
ROOT_URLCONF = "benchmarks.peers.mcpz_site.urls"
DATABASES = {"default": database()}  # noqa: F405
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "loggers": {"django_mcpz": {"level": "WARNING"}},
}
