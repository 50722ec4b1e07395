"""The change bus: tell every process of every host that something changed.

One bus per process, one connection per process for listening, whichever
backend the deployment already has (PostgreSQL LISTEN/NOTIFY, Redis
pub/sub, or in-process for a single process; see docs/deployment.md, "The
change bus"). Messages are small JSON references, never content.

Subscribe to a topic with a callback::

    from mcp_gateway import bus

    def on_catalog(event: bus.CatalogChanged | bus.Resync) -> None:
        if isinstance(event, bus.Resync):
            cache.clear()  # something may have been missed
        else:
            cache.drop(event.tenant, older_than=event.version)

    subscription = bus.subscribe(bus.CatalogChanged, on_catalog)
    ...
    subscription.close()

Callbacks run on the bus's own thread: keep them quick and thread-safe. An
asyncio consumer hands the event to its loop::

    def hand_over(event: bus.CatalogChanged | bus.Resync) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, event)

    bus.subscribe(bus.CatalogChanged, hand_over)

Delivery is at most once. Whenever the bus was not listening (it starts
after you subscribe, or its connection was lost and re-established) every
subscriber owed one gets a ``Resync``: re-check whatever you keep. Keep a
short upper bound on staleness as well, for a bus that is down.

Publishing takes effect when the caller's transaction commits (at once
outside a transaction); a rolled-back transaction publishes nothing::

    bus.publish(bus.CatalogChanged(tenant=tenant.pk, version=7))
    bus.publish(bus.PrincipalChanged(bus.PrincipalKind.TOKEN_REVOKED,
                                     tenant=1, user=2, token="ab12cd34ef56"))

Point to point: every process has an unguessable id and receives what is
sent to it by subscribing to ``Message``. The waiting process passes its
id along with the request (in the shared cache, say); the answering
process sends to it, and ``Message.sender`` is where to reply::

    bus.subscribe(bus.Message, on_message)                  # waiting process
    cache.set(f"request:{rid}", {"reply_to": bus.process_id(), ...})

    bus.send(reply_to, {"request": rid, "answer": key})     # answering one

The id is an address, not a credential: whoever can read the database or
Redis hears every message. The receiver checks what it receives (tenant,
principal, a request id it issued) before acting on it.

Payloads are at most ``MAX_PAYLOAD_BYTES`` once encoded
(``PayloadTooLarge`` otherwise): put content in the shared cache and send
its key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS

from mcp_gateway.bus import backends, presence
from mcp_gateway.bus.core import Stats, Subscription, Topic
from mcp_gateway.bus.events import (
    MAX_PAYLOAD_BYTES,
    CatalogChanged,
    Event,
    Message,
    PayloadTooLarge,
    PrincipalChanged,
    PrincipalKind,
    Resync,
    SecretsChanged,
)
from mcp_gateway.bus.local import SHARED_WARNING
from mcp_gateway.bus.process import close as _close
from mcp_gateway.bus.process import current, peek

__all__ = [
    "MAX_PAYLOAD_BYTES",
    "CatalogChanged",
    "Event",
    "Message",
    "PayloadTooLarge",
    "PrincipalChanged",
    "PrincipalKind",
    "Resync",
    "SecretsChanged",
    "Stats",
    "Subscription",
    "asend",
    "close",
    "cross_process",
    "healthy",
    "process_id",
    "publish",
    "send",
    "stats",
    "subscribe",
    "warn_if_shared",
]

logger = logging.getLogger("mcp_gateway.bus")


def subscribe(
    topic: type[Topic], callback: Callable[[Topic | Resync], object]
) -> Subscription:
    """Call ``callback`` for every event of ``topic``, and on ``Resync``.

    Its return value is ignored.

    ``topic`` is ``CatalogChanged``, ``PrincipalChanged``, ``SecretsChanged``
    or ``Message``
    (messages sent to this process). Starts the bus on first use.
    """
    return current().subscribe(topic, callback)


def publish(
    event: CatalogChanged | PrincipalChanged | SecretsChanged,
    *,
    using: str = DEFAULT_DB_ALIAS,
) -> None:
    """Publish to every process when the transaction on ``using`` commits.

    Raises:
        PayloadTooLarge: the encoded event is over ``MAX_PAYLOAD_BYTES``.
    """
    current().publish(event, using=using)


def send(
    process_id: str, data: Mapping[str, Any], *, using: str = DEFAULT_DB_ALIAS
) -> None:
    """Send ``data`` (a JSON object) to one process, as ``publish`` does.

    Raises:
        PayloadTooLarge: the encoded message is over ``MAX_PAYLOAD_BYTES``.
        ValueError: ``process_id`` is not a bus process id.
    """
    current().send(process_id, data, using=using)


async def asend(
    process_id: str, data: Mapping[str, Any], *, using: str = DEFAULT_DB_ALIAS
) -> None:
    """``send`` from async code (PostgreSQL sends on the ORM's connection)."""
    await sync_to_async(send)(process_id, data, using=using)


def process_id() -> str:
    """This process's unguessable id: the address of its ``Message`` inbox."""
    return current().process_id


def cross_process() -> bool:
    """Whether a change published here reaches other processes and hosts.

    True for PostgreSQL LISTEN/NOTIFY and Redis pub/sub; False for the
    in-process bus (another process on the same SQLite file, or a
    management command, is never heard) and for the bus switched off.
    """
    try:
        return backends.chosen() in (backends.POSTGRESQL, backends.REDIS)
    except ImproperlyConfigured:
        return False


def healthy() -> bool:
    """False only while a started bus is not listening (for readiness)."""
    bus = peek()
    return True if bus is None else bus.healthy()


def stats() -> Stats:
    """This process's bus: backend, state and counters."""
    return current().stats()


def close() -> None:
    """Stop this process's bus and end its subscriptions (tests, shutdown).

    The next use creates a new bus, with a new process id.
    """
    _close()


def warn_if_shared() -> None:
    """Warn at start-up when the in-process bus may serve several processes."""
    try:
        in_process = backends.chosen() == backends.LOCAL
    except ImproperlyConfigured:
        return  # the system checks report it
    if in_process and (reason := presence.server_evidence()) is not None:
        logger.warning(SHARED_WARNING, reason)
