"""Settings of the physical-limit site: the ceiling plus the database.

The database as the reference project's README defaults give the gateway
on PostgreSQL under WSGI: persistent connections with health checks, its
backend whose health check skips the ``SELECT 1`` for a connection that
has just answered (``mcp_gateway.db.postgresql``), prepared statements.
Without that backend this row would pay a round trip the gateway does not.
"""

from __future__ import annotations

from benchmarks.peers.common import *  # noqa: F403

INSTALLED_APPS = DJANGO_APPS  # noqa: F405
ROOT_URLCONF = "benchmarks.ceiling.limit_urls"
DATABASES = {"default": {**database(), "CONN_HEALTH_CHECKS": True}}  # noqa: F405
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "mcp_gateway.db.postgresql"
