"""A bus: its subscribers, its listening thread, its reconnections.

It starts listening (one connection, one daemon thread) on the first
subscription, calls the subscribers of each message heard, and tells them
to resync whenever it listens again after not listening.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from mcp_gateway.bus import backends
from mcp_gateway.bus.backends import Plan
from mcp_gateway.bus.events import (
    CatalogChanged,
    Event,
    Message,
    PrincipalChanged,
    Resync,
    SecretsChanged,
    catalog_payload,
    decode_catalog,
    decode_message,
    decode_principal,
    decode_secrets,
    encode,
    principal_payload,
    secrets_payload,
)
from mcp_gateway.bus.transport import Counters

logger = logging.getLogger("mcp_gateway.bus")

Topic = TypeVar("Topic", CatalogChanged, PrincipalChanged, SecretsChanged, Message)
Published = CatalogChanged | PrincipalChanged | SecretsChanged
BACKOFF_FIRST_SECONDS = 0.1
BACKOFF_MAX_SECONDS = 2.0
CLOSE_TIMEOUT_SECONDS = 2.0
PROCESS_ID = re.compile(r"[0-9a-f]{32}")
CATALOG, PRINCIPAL, SECRETS, INBOX = "catalog", "principal", "secrets", "inbox_{id}"
_DECODERS: dict[type[Any], Callable[[Mapping[str, Any]], Any]] = {
    CatalogChanged: decode_catalog,
    PrincipalChanged: decode_principal,
    SecretsChanged: decode_secrets,
    Message: decode_message,
}


class Subscription:
    """A registered callback; ``close()`` ends it (idempotent)."""

    def __init__(self, topic: type[Any], callback: Callable[[Any], object]) -> None:
        self.topic = topic
        self.callback = callback
        self.active = True
        self.in_sync = False  # False: owed a Resync once the bus listens

    def close(self) -> None:
        self.active = False  # the bus forgets it on its next subscribe

    def __enter__(self) -> Subscription:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True)
class Stats:
    """The bus of this process, for a readiness view and metrics.

    ``published`` counts messages handed to the backend (on PostgreSQL, the
    NOTIFYs issued, whether their transaction commits or not);
    ``received`` those heard; ``delivered`` the callbacks that returned;
    ``failures`` callbacks that raised, publishes Redis refused and
    malformed messages.
    """

    backend: str
    process_id: str
    started: bool
    listening: bool
    subscribers: int
    published: int
    received: int
    delivered: int
    reconnects: int
    failures: int


class Bus:
    def __init__(
        self, inherited: Sequence[Subscription] = (), *, plan: Plan | None = None
    ) -> None:
        self.pid = os.getpid()
        self.process_id = secrets.token_hex(16)
        self.counters = Counters()
        self.plan = backends.plan() if plan is None else plan
        self.transport = backends.build(self.plan, self.counters)
        self._lock = threading.Lock()
        self._subscriptions = [s for s in inherited if s.active]
        for subscription in self._subscriptions:
            subscription.in_sync = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._listening = False
        self._listened_before = False
        self._outage = False
        self._delay = BACKOFF_FIRST_SECONDS
        channel = self.transport.channel
        self._routes: dict[str, type[Any]] = {
            channel(CATALOG): CatalogChanged,
            channel(PRINCIPAL): PrincipalChanged,
            channel(SECRETS): SecretsChanged,
            channel(INBOX.format(id=self.process_id)): Message,
        }

    # Publishing, from the caller's thread.

    def publish(self, event: Published, *, using: str) -> None:
        if isinstance(event, CatalogChanged):
            topic, payload = CATALOG, catalog_payload(event)
        elif isinstance(event, PrincipalChanged):
            topic, payload = PRINCIPAL, principal_payload(event)
        elif isinstance(event, SecretsChanged):
            topic, payload = SECRETS, secrets_payload(event)
        else:
            raise TypeError(f"Not a bus event: {event!r}")
        channel = self.transport.channel(topic)
        self.transport.publish(channel, encode(payload), using=using)

    def send(self, process_id: str, data: Mapping[str, Any], *, using: str) -> None:
        if not PROCESS_ID.fullmatch(process_id):
            raise ValueError("Not a bus process id.")
        payload = encode({"from": self.process_id, "data": dict(data)})
        channel = self.transport.channel(INBOX.format(id=process_id))
        self.transport.publish(channel, payload, using=using)

    # Subscribing.

    def subscribe(
        self, topic: type[Topic], callback: Callable[[Topic | Resync], object]
    ) -> Subscription:
        if topic not in _DECODERS:
            raise TypeError(f"Not a bus topic: {topic!r}")
        subscription = Subscription(topic, callback)
        with self._lock:
            subscription.in_sync = self._listening
            self._subscriptions = [s for s in self._subscriptions if s.active]
            self._subscriptions.append(subscription)
        self.start()
        return subscription

    def start(self) -> None:
        """Start listening (once); the bus switched off never starts."""
        if self.transport.name == backends.OFF:
            return
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(
                target=self._run, name="mcp-gateway-bus", daemon=True
            )
            self._thread.start()

    def close(self) -> list[Subscription]:
        """Stop listening, release the connections; returns the subscribers."""
        self._stop.set()
        self.transport.wake()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(CLOSE_TIMEOUT_SECONDS)
        self.transport.close()
        with self._lock:
            left, self._subscriptions = self._subscriptions, []
            self._listening = False
        return [s for s in left if s.active]

    def healthy(self) -> bool:
        thread = self._thread
        if self.transport.name == backends.OFF or thread is None:
            return True
        return self._listening and thread.is_alive()

    def stats(self) -> Stats:
        c = self.counters
        with self._lock:
            subscribers = sum(s.active for s in self._subscriptions)
        return Stats(
            backend=self.transport.name,
            process_id=self.process_id,
            started=self._thread is not None,
            listening=self._listening,
            subscribers=subscribers,
            published=c.published,
            received=c.received,
            delivered=c.delivered,
            reconnects=c.reconnects,
            failures=c.failures,
        )

    # The listening thread.

    def _run(self) -> None:
        channels = list(self._routes)
        while not self._stop.is_set():
            try:
                self.transport.listen(channels, self, self._stop)
            except Exception as exc:  # any backend failure: reconnect
                self._lost(exc)
            else:
                return  # stopped
            delay, self._delay = self._delay, min(self._delay * 2, BACKOFF_MAX_SECONDS)
            self._stop.wait(delay * random.uniform(0.8, 1.2))  # noqa: S311

    def listening(self) -> None:
        with self._lock:
            self._listening = True
            self._delay = BACKOFF_FIRST_SECONDS
            if self._listened_before:
                self.counters.add("reconnects")
            self._listened_before = True
            owed = [s for s in self._subscriptions if not s.in_sync]
            for subscription in owed:
                subscription.in_sync = True
            recovered, self._outage = self._outage, False
        if recovered:
            logger.info("The change bus is listening again (%s).", self.transport.name)
        self._deliver(owed, Resync())

    def received(self, channel: str, payload: str) -> None:
        self.counters.add("received")
        topic = self._routes.get(channel)
        if topic is None:
            return
        try:
            event = _DECODERS[topic](json.loads(payload))
        except (ValueError, KeyError, TypeError):
            self.counters.add("failures")
            logger.warning("The change bus ignored a malformed message on %s.", channel)
            return
        with self._lock:
            subscribers = [
                s for s in self._subscriptions if s.topic is topic and s.active
            ]
        self._deliver(subscribers, event)

    def _lost(self, exc: Exception) -> None:
        with self._lock:
            self._listening = False
            for subscription in self._subscriptions:
                subscription.in_sync = False
            first, self._outage = not self._outage, True
        log = logger.warning if first else logger.debug
        log(
            "The change bus cannot listen (%s: %s); retrying.",
            self.transport.name,
            exc,
        )

    def _deliver(self, subscribers: list[Subscription], event: Event) -> None:
        for subscription in subscribers:
            if not subscription.active:
                continue
            try:
                subscription.callback(event)
            except Exception:  # one subscriber's bug must not starve the others
                self.counters.add("failures")
                logger.exception("A change bus subscriber raised.")
            else:
                self.counters.add("delivered")
