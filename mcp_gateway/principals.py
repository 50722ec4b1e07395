"""A token's principal kept in the process, so a warm request asks nothing.

The auth backend's one query (the token, its user, its tenant with the
catalog version, whether the user is a member) is kept per (prefix, tenant
slug) and dropped at once when the change bus says something about it
changed: a token revoked or deleted, a user deactivated, deleted or moved
between groups, a membership changed or removed, a tenant disabled, or the
tenant's catalog changed (the kept tenant row carries the catalog version).
A ``Resync`` (the bus missed events) forgets everything.

Only a bus that crosses processes (PostgreSQL LISTEN/NOTIFY, Redis
pub/sub; ``bus.cross_process()``) can say so for every process: with the
in-process bus (SQLite, a local-memory cache) or the bus off nothing is
kept, since another process on the same database, or a management command,
changes rows this process would never hear about.

An entry is trusted for at most ``PRINCIPAL_CACHE_SECONDS`` (the bound on
staleness while the bus is down, and for changes that publish nothing:
``QuerySet.update()``, raw SQL); 0 turns the cache off. Nothing new is kept
while the bus is not listening (before its first ``Resync``, or during an
outage), so a dead bus leaves only entries kept before it died, each gone
within the bound. A token's expiry needs no event: the backend compares the
kept ``expires_at`` with the clock on every request. Only the row is kept;
the secret is still compared with the stored hash on every request.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass

from mcp_gateway import bus
from mcp_gateway.conf import gateway_settings
from mcp_gateway.models import ApiToken

CACHE_SIZE = 10_000
"""Principals kept per process; the least recently used goes first."""

DROPS_KEPT = 1_000
"""Recent drops remembered, to tell whether one concerned a row being read."""

_Key = tuple[str, str]
_Event = bus.PrincipalChanged | bus.CatalogChanged


@dataclass(frozen=True, slots=True)
class _Kept:
    token: ApiToken
    until: float


_kept: OrderedDict[_Key, _Kept] = OrderedDict()
_lock = threading.Lock()
_listening = threading.Lock()
_generation = 0
_drops: deque[tuple[int, _Event | None]] = deque(maxlen=DROPS_KEPT)
"""(generation, event) of recent drops; ``None``: everything was dropped."""
_subscriptions: list[bus.Subscription] = []


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

    A drop since then that may concern the row means it may be stale: not
    kept (a drop about another token, user or tenant does not matter).
    Nothing is kept unless the bus crosses processes and listens.
    """
    seconds = gateway_settings().PRINCIPAL_CACHE_SECONDS
    if seconds <= 0 or not bus.cross_process():
        return
    listen()
    if not listening():
        return
    with _lock:
        if _dropped_since(since, token):
            return
        _kept[(prefix, slug)] = _Kept(token, time.monotonic() + seconds)
        while len(_kept) > CACHE_SIZE:
            _kept.popitem(last=False)


def _dropped_since(since: int, token: ApiToken) -> bool:
    """Whether a drop after generation ``since`` may concern ``token``."""
    if since == _generation:
        return False
    if not _drops or _drops[0][0] > since + 1:
        return True  # forgotten: assume it did
    return any(
        event is None or _about(event, token)
        for generation, event in _drops
        if generation > since
    )


def clear() -> None:
    """Forget every kept principal (tests; ``Resync``)."""
    global _generation
    with _lock:
        _generation += 1
        _drops.append((_generation, None))
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
        _drops.append((_generation, event))
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
    # ``in_sync``: subscribed while the bus listened, or owed a ``Resync``
    # that the bus is delivering (it clears what was kept meanwhile).
    subs = list(_subscriptions)
    return bool(subs) and all(sub.active and sub.in_sync for sub in subs)


def listen() -> None:
    """Subscribe to the bus (idempotent); the first use of ``keep`` does."""
    if _subscriptions and all(sub.active for sub in _subscriptions):
        return
    with _listening:  # not _lock: a Resync may arrive while subscribing
        if _subscriptions and all(sub.active for sub in _subscriptions):
            return
        for sub in _subscriptions:
            sub.close()
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
        else:
            _drop(event)

    return bus.subscribe(topic, on_event)  # type: ignore[type-var]
