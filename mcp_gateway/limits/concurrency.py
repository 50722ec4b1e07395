"""A cap on each tenant's tool calls in flight, shared by every worker.

With ``MAX_CONCURRENT_CALLS_PER_TENANT`` set, an engine runs only while its
call holds a *lease*: one of the tenant's ``cap`` slot keys in the
rate-limit cache (``RATE_LIMIT_CACHE``), taken with the cache's atomic
``add``. Every worker process and host sharing that cache shares the count
(per process with the local-memory cache). A lease expires by itself after
the engine's deadline plus a margin, so a crashed worker cannot leak it,
and is given back when the call ends, however it ends: a result, an error,
a timeout, a cancellation or a client gone away. A call finding every slot
taken is answered at once, as a full engine pool answers: a tool result
with ``isError`` and the code ``BUSY`` (audited ``busy``).

The cache being unusable follows ``RATE_LIMIT_FAIL_OPEN``: calls run
uncounted, or are answered BUSY.
"""

from __future__ import annotations

import contextlib
import random
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.core.cache import caches

from engines_app.context import EngineContext
from mcp_gateway.conf import gateway_settings
from mcp_gateway.limits import ratelimit

MARGIN_SECONDS = 10.0
"""A lease outlives its engine's deadline by this much (answer, audit row)."""


@dataclass(frozen=True)
class Lease:
    key: str
    holder: str
    expires: float
    """``time.monotonic()`` when the cache lets the slot go by itself."""


@contextlib.contextmanager
def lease(context: EngineContext) -> Iterator[bool]:
    """Hold one of the tenant's slots while the block runs; yield whether
    the call may run (always, without a cap)."""
    cap = gateway_settings().MAX_CONCURRENT_CALLS_PER_TENANT
    if cap is None:
        yield True
        return
    try:
        held = acquire(context.principal.tenant, cap, _ttl(context))
    except Exception:  # any cache failure: Redis down, timeouts, ...
        yield ratelimit.cache_down().allowed
        return
    try:
        yield held is not None
    finally:
        if held is not None:
            release(held)


def acquire(tenant: str, cap: int, ttl: float) -> Lease | None:
    """Take a free slot of ``tenant`` for ``ttl`` seconds, or ``None``.

    One cache round trip while the tenant has room: ``add`` on a slot picked
    at random. Only when that slot is taken are the others read, and the
    free ones tried.
    """
    cache = caches[gateway_settings().RATE_LIMIT_CACHE]
    keys = [f"mcpgw:cc:{tenant}:{slot}" for slot in range(max(0, cap))]
    if not keys:
        return None
    holder = secrets.token_hex(8)
    expires = time.monotonic() + ttl
    # Spread callers over the slots (no secret): racers rarely collide.
    first = random.choice(keys)  # noqa: S311
    if cache.add(first, holder, ttl):
        return Lease(first, holder, expires)
    taken = cache.get_many(keys)
    free = [key for key in keys if key not in taken and key != first]
    random.shuffle(free)
    for key in free:
        if cache.add(key, holder, ttl):
            return Lease(key, holder, expires)
    return None


def release(held: Lease) -> None:
    """Give a slot back: one ``delete`` while the lease cannot have expired;
    past that, only if no other call holds the slot now."""
    cache = caches[gateway_settings().RATE_LIMIT_CACHE]
    try:
        unexpired = time.monotonic() < held.expires - 1
        if unexpired or cache.get(held.key) == held.holder:
            cache.delete(held.key)
    except Exception:  # the slot expires by itself
        ratelimit.cache_down()


def in_flight(tenant: str, cap: int) -> int:
    """How many of ``tenant``'s slots are held (for tests and operators)."""
    cache = caches[gateway_settings().RATE_LIMIT_CACHE]
    return len(cache.get_many([f"mcpgw:cc:{tenant}:{slot}" for slot in range(cap)]))


def _ttl(context: EngineContext) -> float:
    remaining = context.signal.remaining()
    deadline = (
        gateway_settings().ENGINE_DEADLINE_SECONDS if remaining is None else remaining
    )
    return deadline + MARGIN_SECONDS
