"""What a backend provides: publish from the caller, listen on one thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from django.db import connections, transaction

TICK_SECONDS = 0.25
"""How often a listening loop looks at its stop flag while idle."""
PING_SECONDS = 5.0
"""How often an idle listening connection proves it is alive."""


class Receiver(Protocol):
    """The bus side of a listening loop."""

    def listening(self) -> None:
        """The connection is up and every channel is listened to."""

    def received(self, channel: str, payload: str) -> None:
        """One message arrived; must not raise."""


class Transport(Protocol):
    name: str

    def channel(self, topic: str) -> str:
        """The backend's channel name for a topic."""

    def publish(self, channel: str, payload: str, *, using: str) -> None:
        """Send when the caller's transaction on ``using`` commits."""

    def listen(
        self, channels: Sequence[str], receiver: Receiver, stop: threading.Event
    ) -> None:
        """Open the one connection, listen, return when ``stop`` is set.

        Raises whatever the backend raises when the connection fails or is
        lost; the bus then reconnects with backoff.
        """

    def wake(self) -> None:
        """Make a blocked ``listen`` look at its stop flag soon."""

    def close(self) -> None:
        """Release what publishing holds (connection pools)."""


@dataclass
class Counters:
    """Totals since the bus started, for metrics; updated under a lock."""

    published: int = 0
    received: int = 0
    delivered: int = 0
    reconnects: int = 0
    failures: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + amount)


def after_commit(send: Callable[[], None], using: str) -> None:
    """Run ``send`` when the transaction on ``using`` commits, or now.

    Reads ``in_atomic_block`` first, so a caller outside any transaction
    opens no database connection just to publish.
    """
    if connections[using].in_atomic_block:
        transaction.on_commit(send, using=using, robust=True)
    else:
        send()
