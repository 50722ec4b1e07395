"""Settings of the physical-limit site: the ceiling plus the database.

The database as the reference project's README defaults give the gateway
on PostgreSQL: persistent connections with health checks, prepared
statements.
"""

from __future__ import annotations

from benchmarks.peers.common import *  # noqa: F403

INSTALLED_APPS = DJANGO_APPS  # noqa: F405
ROOT_URLCONF = "benchmarks.ceiling.limit_urls"
DATABASES = {"default": {**database(), "CONN_HEALTH_CHECKS": True}}  # noqa: F405
