"""Per-tenant and per-token call limits, counted in Django's cache.

A limit of ``per_minute`` calls with ``burst`` is a fixed window of
``60 * burst / per_minute`` seconds that admits ``burst`` calls: the long-run
rate is ``per_minute``, and at most ``burst`` calls arrive together (twice
that across a window edge). Counters use ``cache.add`` + ``cache.incr``,
which are atomic in Redis and in the local-memory cache, so every worker
process and host sharing the cache shares the count.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

from django.core.cache import caches

from engines_app.context import Principal
from mcp_gateway.conf import gateway_settings
from mcp_gateway.models import Tenant

logger = logging.getLogger("mcp_gateway")

WARN_EVERY_SECONDS = 60.0
_warned = {"at": -math.inf}
_warn_lock = threading.Lock()


@dataclass(frozen=True)
class Limit:
    per_minute: int
    burst: int

    @property
    def window(self) -> float:
        return 60.0 * self.burst / self.per_minute


@dataclass(frozen=True)
class Verdict:
    """``retry_after`` seconds when refused; ``unavailable`` when unknown."""

    allowed: bool
    retry_after: int = 0
    unavailable: bool = False


ALLOWED = Verdict(True)


def check(tenant: Tenant, principal: Principal) -> Verdict:
    """Count one call against the tenant's and the caller's limits."""
    limits = _limits(tenant, principal)
    if not limits:
        return ALLOWED
    try:
        for key, limit in limits:
            retry_after = _hit(key, limit, time.time())
            if retry_after:
                return Verdict(False, retry_after)
    except Exception:  # any cache failure: Redis down, timeouts, ...
        return cache_down()
    return ALLOWED


def _limits(tenant: Tenant, principal: Principal) -> list[tuple[str, Limit]]:
    tenant_limit = _limit(tenant.calls_per_minute, tenant.burst)
    token_limit = _limit(tenant.token_calls_per_minute, tenant.token_burst)
    if tenant_limit is None and token_limit is None:
        return []  # the common case pays for no key
    base = f"mcpgw:rl:{tenant.pk}:{tenant.created_at.timestamp():.6f}"
    limits = []
    if tenant_limit is not None:
        limits.append((f"{base}:t", tenant_limit))
    caller = principal.token or (f"u:{principal.user}" if principal.user else None)
    if token_limit is not None and caller is not None:
        limits.append((f"{base}:k:{caller}", token_limit))
    return limits


def _limit(per_minute: int | None, burst: int | None) -> Limit | None:
    if not per_minute:
        return None
    return Limit(per_minute, burst or per_minute)


def _hit(key: str, limit: Limit, now: float) -> int:
    """Count a call; return 0 when admitted, else seconds until a retry."""
    window = limit.window
    index = math.floor(now / window)
    full_key = f"{key}:{index}"
    cache = caches[gateway_settings().RATE_LIMIT_CACHE]
    timeout = math.ceil(window) + 1
    cache.add(full_key, 0, timeout)
    try:
        count = cache.incr(full_key)
    except ValueError:  # expired between add and incr: a fresh window
        count = 1 if cache.add(full_key, 1, timeout) else cache.incr(full_key)
    if count <= limit.burst:
        return 0
    return max(1, math.ceil((index + 1) * window - now))


def cache_down() -> Verdict:
    """The verdict while the cache is unusable; logs at most once a minute."""
    fail_open = gateway_settings().RATE_LIMIT_FAIL_OPEN
    now = time.monotonic()
    with _warn_lock:
        due = now - _warned["at"] >= WARN_EVERY_SECONDS
        if due:
            _warned["at"] = now
    if due:
        logger.error(
            "Rate-limit cache unavailable; calls are %s until it is back.",
            "admitted without limits" if fail_open else "refused (503)",
            exc_info=True,
        )
    return ALLOWED if fail_open else Verdict(False, unavailable=True)
