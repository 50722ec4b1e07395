"""Liveness and readiness views for a load balancer, compose or Kubernetes.

Both are unauthenticated and say nothing a stranger could use: no version, no
backend name, no error text; a 200 or 503 with a tiny JSON body. Liveness
only proves the process answers (restart it when this fails); readiness
proves the database, the cache and the change bus are reachable (take the
worker out of rotation while it fails, do not restart it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from mcp_gateway import bus

logger = logging.getLogger("mcp_gateway.health")

_PROBE_KEY = "mcp_gateway:readyz"


@never_cache
@require_safe
def liveness_view(request: HttpRequest) -> JsonResponse:
    """200 as long as the process can run a view at all."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def readiness_view(request: HttpRequest) -> JsonResponse:
    """200 when every dependency answers, 503 naming none of the failures' causes."""
    checks = {"database": _database, "cache": _cache, "bus": bus.healthy}
    if all(_passes(name, check) for name, check in checks.items()):
        return JsonResponse({"status": "ok"})
    return JsonResponse({"status": "unavailable"}, status=503)


def _passes(name: str, check: Callable[[], bool]) -> bool:
    """Run one check; its exception goes to the log, never to the response."""
    try:
        return check()
    except Exception:
        logger.warning("readiness check %s failed", name, exc_info=True)
        return False


def _database() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return bool(cursor.fetchone() == (1,))


def _cache() -> bool:
    cache.set(_PROBE_KEY, "1", timeout=5)
    return bool(cache.get(_PROBE_KEY) == "1")
