"""``notifications/cancelled`` on the 2025 wires, from any worker of any host.

A stateless server answers the cancel on whichever worker it lands: that
worker rarely runs the call. So every running 2025-era ``tools/call`` is
noted twice: in this process (its engine's signal, under an unguessable
token) and in the shared cache (``RATE_LIMIT_CACHE``), keyed by tenant,
principal and the client's request id, holding this process's bus address
and the token. The worker that receives the cancel reads the cache and sends
the token through the change bus (``bus.send``); the running worker checks
that the message names a call it runs, for the same tenant, principal and
request id, and only then sets the engine's signal. The call's audit row
says ``cancelled``.

Collision rule: request ids are unique only per client, and one principal
may run several clients. When a second call of the same tenant and
principal starts with a request id already running, the id is marked
ambiguous, and a cancel naming it is ignored until the marker expires (at
the later call's deadline): cancelling the wrong call would be worse than
cancelling none. The principal is the caller's user and token together.

A call is announced only once it has run for :data:`ANNOUNCE_AFTER_SECONDS`
(by one announcer thread per process): most calls end sooner and so never
touch the shared cache, and a person's cancel comes later than that. A
cancel that names a call younger than that finds nothing and is dropped,
like one for a finished call.

The 2026-07-28 wire has no client notifications over HTTP: closing the
response stream is the cancellation there (the endpoint's business).
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import logging
import math
import os
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.cache import caches
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engines_app.context import Principal, Signal
from mcp_gateway import bus
from mcp_gateway.conf import gateway_settings

logger = logging.getLogger("mcp_gateway")

KIND = "mcp_gateway.cancel"
"""The ``kind`` of a cancel message on the bus (other messages are ignored)."""
AMBIGUOUS = "ambiguous"
"""The cache value of a request id two running calls share."""
CACHE_PREFIX = "mcpgw:running:"
ANNOUNCE_AFTER_SECONDS = 0.05
"""How long a call runs before it is noted in the shared cache."""
_NO_DEADLINE_SECONDS = 3600
_SLACK_SECONDS = 5
_LISTEN_SECONDS = 1.0
_BACKOFF_SECONDS = 1.0
_failing_until = [0.0]  # monotonic time until which calls are left unnoted


_PENDING, _ANNOUNCING, _ANNOUNCED = "pending", "announcing", "announced"
_ENDED, _SKIPPED = "ended", "skipped"


@dataclass
class Running:
    """One running call of this process that a cancel may name."""

    token: str
    key: str
    signal: Signal
    cancelled: bool = False
    state: str = _PENDING  # guarded by _lock
    ended_while_announcing: bool = False


_running: dict[str, Running] = {}
_lock = threading.Lock()
_due = threading.Condition(_lock)
_queue: list[tuple[float, str]] = []  # (when to announce, token), a heap
_announcer: list[int] = []  # the pid whose announcer thread runs
_sleeping = [False]  # the announcer waits for _schedule (guarded by _lock)
_subscribed: list[tuple[str, bus.Subscription]] = []


def cancellable(version: str, request_id: Any) -> bool:
    """Whether a call at ``version`` can be cancelled by notification."""
    return version not in MODERN_PROTOCOL_VERSIONS and _is_id(request_id)


def key_of(tenant_id: int, principal: Principal, request_id: Any) -> str:
    """The shared-cache key of a running call (hashed: ids are the client's)."""
    name = json.dumps(
        [tenant_id, principal.user, principal.token, request_id],
        separators=(",", ":"),
    )
    return CACHE_PREFIX + hashlib.sha256(name.encode()).hexdigest()


@contextlib.contextmanager
def watching(
    tenant_id: int,
    principal: Principal,
    version: str,
    request_id: Any,
    signal: Signal,
) -> Iterator[Running | None]:
    """Make the call cancellable while the block runs (2025 wires only).

    A cache failure leaves the call uncancellable, never failed.
    """
    if not cancellable(version, request_id):
        yield None
        return
    running = Running(
        secrets.token_urlsafe(18), key_of(tenant_id, principal, request_id), signal
    )
    _schedule(running)
    try:
        yield running
    finally:
        _end(running)


def relay(tenant_id: int, principal: Principal, params: Any) -> bool:
    """Pass a client's cancel to the worker running the call it names.

    True when it was sent; False when no single running call of this
    principal has the id (unknown, finished or ambiguous).
    """
    request_id = params.get("requestId") if isinstance(params, Mapping) else None
    if not _is_id(request_id):
        return False
    try:
        key = key_of(tenant_id, principal, request_id)
        held = _cache().get(key)
        if not isinstance(held, dict):
            return False  # unknown, finished, or ambiguous: do nothing
        message = {"kind": KIND, "token": held["token"], "key": key}
        bus.send(held["process"], message)
    except Exception:
        logger.warning("Could not relay a cancellation.")
        return False
    return True


def cancelled(running: Running | None) -> bool:
    """Whether the client cancelled this call."""
    return running is not None and running.cancelled


def running_count() -> int:
    """How many cancellable calls this process runs (tests, bounded memory)."""
    return len(_running)


# -- This process's side ------------------------------------------------------------


def _schedule(running: Running) -> None:
    """Note the call here; the announcer notes it in the shared cache later."""
    with _lock:
        _running[running.token] = running
        heapq.heappush(
            _queue, (time.monotonic() + ANNOUNCE_AFTER_SECONDS, running.token)
        )
        if _announcer != [os.getpid()]:  # none yet, or forked from its process
            _announcer[:] = [os.getpid()]
            threading.Thread(
                target=_announce_due, name="mcp-gateway-cancellation", daemon=True
            ).start()
        if _sleeping[0]:  # else it wakes before this call is due
            _sleeping[0] = False
            _due.notify()


def _announce_due() -> None:
    """The announcer thread: note each call still running when it is due."""
    while True:
        with _lock:
            _wait_for_due()
            _, token = heapq.heappop(_queue)
            running = _running[token]  # pending: _drop_ended kept it
            running.state = _ANNOUNCING
        _announce(running)


def _wait_for_due() -> None:
    """Wait (under _lock) until the queue's head is a pending call now due.

    Calls that ended are dropped whenever the thread wakes. While calls come
    and go it wakes at their due times or once per
    :data:`ANNOUNCE_AFTER_SECONDS`, whichever comes first, not once per
    call; only after a quiet spell does it sleep until ``_schedule`` wakes it.
    """
    busy = True
    while True:
        _drop_ended()
        now = time.monotonic()
        if _queue and _queue[0][0] <= now:
            return
        if _queue:
            _due.wait(_queue[0][0] - now)
            busy = True
        elif busy:
            _due.wait(ANNOUNCE_AFTER_SECONDS)  # a call scheduled meanwhile waits
            busy = False
        else:
            _sleeping[0] = True
            _due.wait()
            _sleeping[0], busy = False, True


def _drop_ended() -> None:
    """Pop the queue's head while it is a call no longer pending (under _lock)."""
    while _queue:
        running = _running.get(_queue[0][1])
        if running is not None and running.state == _PENDING:
            return
        heapq.heappop(_queue)


def _announce(running: Running) -> None:
    """Note one call in the shared cache; for a second after a failure the
    calls due are left unnoted (uncancellable), so a cache that hangs holds
    up one call, not every call behind it."""
    if time.monotonic() < _failing_until[0]:
        with _lock:
            running.state = _SKIPPED
        return
    try:
        _subscribe()
        entry = {"process": bus.process_id(), "token": running.token}
        cache = _cache()
        timeout = _timeout(running.signal)
        if not cache.add(running.key, entry, timeout):
            cache.set(running.key, AMBIGUOUS, timeout)  # the collision rule
    except Exception:
        _failing_until[0] = time.monotonic() + _BACKOFF_SECONDS
        logger.warning("Could not note a running call for cancellation.")
        with _lock:
            running.state = _SKIPPED  # nothing to withdraw; an entry expires
        return
    with _lock:
        ended = running.ended_while_announcing
        running.state = _ENDED if ended else _ANNOUNCED
    if ended:
        _withdraw(running)


def _end(running: Running) -> None:
    """The call ended: forget it here, and in the cache if it was noted."""
    with _lock:
        _running.pop(running.token, None)
        noted = running.state == _ANNOUNCED
        if running.state == _ANNOUNCING:
            running.ended_while_announcing = True  # the announcer withdraws it
        else:
            running.state = _ENDED
    if noted:
        _withdraw(running)


def _withdraw(running: Running) -> None:
    try:
        cache = _cache()
        if cache.get(running.key) == {
            "process": bus.process_id(),
            "token": running.token,
        }:
            cache.delete(running.key)
    except Exception:
        logger.warning("Could not forget a running call; it expires.")


def _subscribe() -> None:
    """Listen for cancels once per bus (a new bus has a new process id).

    A new subscription waits for the bus to listen (a second at most): a
    call noted before that could be relayed a cancel the bus never hears.
    """
    address = bus.process_id()
    with _lock:
        current = _subscribed[0] if _subscribed else None
        if current is not None and current[0] == address and current[1].active:
            return
        subscription = bus.subscribe(bus.Message, _on_message)
        _subscribed[:] = [(address, subscription)]
    waited = 0.0
    while not subscription.in_sync and waited < _LISTEN_SECONDS:
        time.sleep(0.01)
        waited += 0.01


def _on_message(event: bus.Message | bus.Resync) -> None:
    """A cancel for a call this process runs sets its signal; nothing else."""
    if not isinstance(event, bus.Message) or event.data.get("kind") != KIND:
        return
    token = event.data.get("token")
    with _lock:
        running = _running.get(token) if isinstance(token, str) else None
    if running is None or running.key != event.data.get("key"):
        return  # finished meanwhile, never ours, or another caller's
    running.cancelled = True
    running.signal.cancel()


def _timeout(signal: Signal) -> int:
    remaining = signal.remaining()
    if remaining is None:
        return _NO_DEADLINE_SECONDS
    return math.ceil(remaining) + _SLACK_SECONDS


def _cache() -> Any:
    return caches[gateway_settings().RATE_LIMIT_CACHE]


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)
