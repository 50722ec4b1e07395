"""Call quotas per UTC day and month, per tenant and per token, in the cache.

A tenant's ``calls_per_day`` / ``calls_per_month`` bound the calls of the
whole tenant, its ``token_calls_per_day`` / ``token_calls_per_month`` those
of each token (an OAuth caller counts as its user). A token may carry its
own ``calls_per_day`` / ``calls_per_month``, which replace the tenant's
per-token quotas for that token (optional; set when the token is issued).
Only calls admitted to run an engine count: the check runs after the rate
limits, and a call that then runs no engine (an unknown tool, bad
arguments, every slot or pool thread busy) gives its unit back when it is recorded.

Each count is one key of the rate-limit cache (``RATE_LIMIT_CACHE``) per
period, taken with ``add`` + ``incr``, which are atomic in Redis and in the
local-memory cache: every worker and host sharing the cache shares the
count, and N racing calls at the boundary get N distinct counts, so exactly
the quota is admitted. A refused call gives its unit back at once (``decr``),
so the counts stay the calls admitted. No database query is made.

A call over a quota is answered like a rate-limited one: HTTP 429 with
``Retry-After`` (seconds until the period resets, UTC) and a JSON-RPC error
whose ``data.code`` is ``QUOTA``; it is audited ``quota``. The cache being
unusable follows ``RATE_LIMIT_FAIL_OPEN``, as the rate limits do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.cache import caches

from engines_app.context import Principal
from mcp_gateway.audit.callrecord import (
    AWAITING,
    BUSY,
    DECLINED,
    DENIED,
    EXPIRED,
    INVALID,
    QUOTA,
    RATE_LIMITED,
    UNCONFIRMED,
)
from mcp_gateway.conf import gateway_settings
from mcp_gateway.limits import ratelimit
from mcp_gateway.models import Tenant

DAY = "day"
MONTH = "month"
CODE = "QUOTA"
KEEP_SECONDS = 3600
"""A count outlives its period by this much (clocks of hosts drift)."""
NOT_RUN = frozenset(
    {INVALID, BUSY, DENIED, RATE_LIMITED, QUOTA}
    | {AWAITING, DECLINED, EXPIRED, UNCONFIRMED}  # the gateway asked; none ran
)
"""Outcomes of calls that ran no engine: their unit is given back."""


@dataclass(frozen=True)
class TokenPrincipal(Principal):
    """A principal authenticated by a token that has quotas of its own.

    Made by the view from the token it authenticated, so reading the
    token's quotas costs no query; engines see it as a plain ``Principal``.
    """

    calls_per_day: int | None = None
    calls_per_month: int | None = None


@dataclass(frozen=True)
class Quota:
    key: str
    limit: int
    period: str
    resets: datetime


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after: int = 0
    period: str = ""
    unavailable: bool = False
    charged: tuple[str, ...] = ()


ALLOWED = Verdict(True)


def check(tenant: Tenant, principal: Principal, now: datetime | None = None) -> Verdict:
    """Count one call against the tenant's and the caller's quotas."""
    if not limited(tenant, principal):
        return ALLOWED  # the common case pays for no clock and no key
    moment = now or datetime.now(UTC)
    quotas = applicable(tenant, principal, moment)
    cache = caches[gateway_settings().RATE_LIMIT_CACHE]
    charged: list[str] = []
    try:
        for quota in quotas:
            count = _incr(cache, quota, moment)
            charged.append(quota.key)
            if count > quota.limit:
                give_back(charged)
                wait = math.ceil((quota.resets - moment).total_seconds())
                return Verdict(False, max(1, wait), quota.period)
    except Exception:  # any cache failure: Redis down, timeouts, ...
        give_back(charged)
        return (
            ALLOWED if ratelimit.cache_down().allowed else Verdict(False, 0, "", True)
        )
    return Verdict(True, charged=tuple(charged))


def limited(tenant: Tenant, principal: Principal | None = None) -> bool:
    """Whether ``tenant`` or the caller's token has any quota."""
    return bool(
        tenant.calls_per_day
        or tenant.calls_per_month
        or tenant.token_calls_per_day
        or tenant.token_calls_per_month
        or isinstance(principal, TokenPrincipal)
    )


def token_limits(tenant: Tenant, principal: Principal) -> tuple[int | None, int | None]:
    """The caller's own quotas per day and per month: the token's where it
    has one, else the tenant's quota per token."""
    if isinstance(principal, TokenPrincipal):
        return (
            principal.calls_per_day or tenant.token_calls_per_day,
            principal.calls_per_month or tenant.token_calls_per_month,
        )
    return tenant.token_calls_per_day, tenant.token_calls_per_month


def applicable(tenant: Tenant, principal: Principal, now: datetime) -> list[Quota]:
    """The quotas a call of ``principal`` counts against, months first (a
    month refused is the longer wait)."""
    caller = caller_of(principal)
    per_day, per_month = token_limits(tenant, principal) if caller else (None, None)
    limits = (
        (tenant.calls_per_month, MONTH, None),
        (tenant.calls_per_day, DAY, None),
        (per_month, MONTH, caller),
        (per_day, DAY, caller),
    )
    return [
        Quota(key_of(tenant, period, now, who), limit, period, reset(period, now))
        for limit, period, who in limits
        if limit
    ]


def caller_of(principal: Principal) -> str | None:
    return principal.token or (f"u:{principal.user}" if principal.user else None)


def key_of(tenant: Tenant, period: str, now: datetime, caller: str | None) -> str:
    """The count's key: the tenant (as created: a slug reused starts anew),
    the period (``d20261201``, ``m202612``), the caller for a token quota."""
    stamp = now.strftime("d%Y%m%d" if period == DAY else "m%Y%m")
    base = f"mcpgw:q:{tenant.pk}:{tenant.created_at.timestamp():.6f}:{stamp}"
    return f"{base}:t" if caller is None else f"{base}:k:{caller}"


def reset(period: str, now: datetime) -> datetime:
    """When the period holding ``now`` ends (UTC midnight, or the 1st)."""
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if period == DAY:
        return day + timedelta(days=1)
    first = day.replace(day=1)
    return (first + timedelta(days=32)).replace(day=1)


def _incr(cache: Any, quota: Quota, now: datetime) -> int:
    timeout = math.ceil((quota.resets - now).total_seconds()) + KEEP_SECONDS
    cache.add(quota.key, 0, timeout)
    try:
        return int(cache.incr(quota.key))
    except ValueError:  # expired between add and incr: a fresh period
        return 1 if cache.add(quota.key, 1, timeout) else int(cache.incr(quota.key))


def give_back(keys: Iterable[str]) -> None:
    """Return the units of a call that did not run (best effort)."""
    cache = caches[gateway_settings().RATE_LIMIT_CACHE]
    for key in keys:
        try:
            cache.decr(key)
        except Exception:  # expired, or the cache is down: nothing to return
            ratelimit.cache_down()


def settle(charged: tuple[str, ...], outcome: str | None) -> None:
    """Give a recorded call's units back when it ran no engine."""
    if charged and outcome in NOT_RUN:
        give_back(charged)


@dataclass(frozen=True)
class Usage:
    period: str
    used: int
    limit: int | None


def usage(tenant: Tenant, now: datetime | None = None) -> list[Usage]:
    """The tenant's counts against its own quotas this day and month."""
    now = now or datetime.now(UTC)
    keys = {period: key_of(tenant, period, now, None) for period in (DAY, MONTH)}
    try:
        counts = caches[gateway_settings().RATE_LIMIT_CACHE].get_many(keys.values())
    except Exception:
        counts = {}
    return [
        Usage(DAY, int(counts.get(keys[DAY], 0)), tenant.calls_per_day),
        Usage(MONTH, int(counts.get(keys[MONTH], 0)), tenant.calls_per_month),
    ]
