"""Settings of the ceiling project: the reference project's middleware, no DB."""

from __future__ import annotations

from benchmarks.peers.common import *  # noqa: F403

INSTALLED_APPS = DJANGO_APPS  # noqa: F405
ROOT_URLCONF = "benchmarks.ceiling.urls"
DATABASES: dict[str, dict[str, str]] = {}
