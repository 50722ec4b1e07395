"""A token's principal kept in the process, so a warm request asks nothing.

The auth backend's one query (the token, its user, its tenant with the
catalog version, whether the user is a member) is kept per (prefix, tenant
slug) and dropped at once when the change bus says something about it
changed: a token revoked or deleted, a user deactivated, deleted or moved
between groups, a membership changed or removed, a tenant disabled, or the
tenant's catalog changed (the kept tenant row carries the catalog version).
A ``Resync`` (the bus missed events) forgets everything.

An entry is trusted for at most ``PRINCIPAL_CACHE_SECONDS`` (the bound on
staleness while the bus is down); 0 turns the cache off. Nothing new is
kept while the bus is not listening (before its first ``Resync``, or during
an outage), so a dead bus leaves only entries kept before it died, each
gone within the bound. A token's expiry needs
no event: the backend checks ``expires_at`` against the clock on every
request, cached or not. Only the row is kept; the secret is still compared
with the stored hash on every request.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from mcp_gateway import bus
from mcp_gateway.conf import gateway_settings
from mcp_gateway.models import ApiToken

CACHE_SIZE = 10_000
"""Principals kept per process; the least recently used goes first."""

_Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Kept:
    token: ApiToken
    until: float


_kept: OrderedDict[_Key, _Kept] = OrderedDict()
_lock = threading.Lock()
_listening = threading.Lock()
_generation = 0
_subscriptions: list[bus.Subscription] = []
_resynced: set[type] = set()
"""The topics whose first ``Resync`` was delivered since subscribing."""


def generation() -> int:
    """A number that changes on every drop: pass it to ``keep``."""
    return _generation


def get(prefix: str, slug: str) -> ApiToken | None:
    """The kept token row, unless dropped or older than the bound."""
    with _lock:
        kept = _kept.get((prefix, slug))
        if kept is None:
            return None
        if kept.until <= time.monotonic():
            del _kept[(prefix, slug)]
            return None
        _kept.move_to_end((prefix, slug))
        return kept.token


def keep(prefix: str, slug: str, token: ApiToken, since: int) -> None:
    """Keep ``token``, read after ``generation()`` returned ``since``.

    A drop between the read and now means the row may be stale: not kept.
    """
    seconds = gateway_settings().PRINCIPAL_CACHE_SECONDS
    if seconds <= 0:
        return
    listen()
    if not listening():
        return
    with _lock:
        if since != _generation:
            return
        _kept[(prefix, slug)] = _Kept(token, time.monotonic() + seconds)
        while len(_kept) > CACHE_SIZE:
            _kept.popitem(last=False)


def clear() -> None:
    """Forget every kept principal (tests; ``Resync``)."""
    global _generation
    with _lock:
        _generation += 1
        _kept.clear()


def forget(event: bus.PrincipalChanged | bus.CatalogChanged) -> None:
    """Drop what ``event`` may concern, in this process, now.

    The publisher calls it besides publishing: its own process forgets at
    once (even inside a transaction not yet committed; a miss costs only a
    query), the others when the bus delivers.
    """
    _drop(event)


def _drop(event: bus.PrincipalChanged | bus.CatalogChanged) -> None:
    global _generation
    with _lock:
        _generation += 1
        for key in [key for key, kept in _kept.items() if _about(event, kept.token)]:
            del _kept[key]


def _about(event: bus.PrincipalChanged | bus.CatalogChanged, token: ApiToken) -> bool:
    """Whether ``event`` may concern ``token`` (unknown references: yes)."""
    if isinstance(event, bus.CatalogChanged):
        return token.tenant_id == event.tenant
    refs = (event.token, event.user, event.tenant)
    if all(ref is None for ref in refs):
        return True
    return (
        (event.token is not None and event.token == token.prefix)
        or (event.user is not None and str(event.user) == str(token.user_id))
        or (
            event.token is None
            and event.user is None
            and event.tenant == token.tenant_id
        )
    )


def listening() -> bool:
    """Whether the bus delivers principal and catalog changes right now."""
    subs = list(_subscriptions)
    return bool(subs) and all(
        sub.active and sub.in_sync and sub.topic in _resynced for sub in subs
    )


def listen() -> None:
    """Subscribe to the bus (idempotent); the first use of ``keep`` does."""
    if _subscriptions and all(sub.active for sub in _subscriptions):
        return
    with _listening:  # not _lock: a Resync may arrive while subscribing
        if _subscriptions and all(sub.active for sub in _subscriptions):
            return
        for sub in _subscriptions:
            sub.close()
        _resynced.clear()
        _subscriptions[:] = [
            _subscribe(bus.PrincipalChanged),
            _subscribe(bus.CatalogChanged),
        ]


def _subscribe(
    topic: type[bus.PrincipalChanged | bus.CatalogChanged],
) -> bus.Subscription:
    def on_event(event: bus.PrincipalChanged | bus.CatalogChanged | bus.Resync) -> None:
        if isinstance(event, bus.Resync):
            clear()
            _resynced.add(topic)
        else:
            _drop(event)

    return bus.subscribe(topic, on_event)  # type: ignore[type-var]
