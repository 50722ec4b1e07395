"""The in-process bus: for one process (SQLite, a local-memory cache)."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Sequence
from pathlib import Path

from mcp_gateway.bus.presence import Registration, count_live
from mcp_gateway.bus.transport import TICK_SECONDS, Counters, Receiver, after_commit

logger = logging.getLogger("mcp_gateway.bus")
QUEUE_SIZE = 10_000
SHARED_WARNING = (
    "The change bus is in-process: a change reaches only the subscribers "
    "of the process that made it, and %s. "
    "Use PostgreSQL (DATABASE_URL) or a Redis cache (CACHE_URL) with several "
    "processes; see docs/deployment.md, 'The change bus'."
)


class LocalTransport:
    name = "local"

    def __init__(self, counters: Counters, directory: Path | None) -> None:
        self._counters = counters
        self._directory = directory
        self._queue: queue.Queue[tuple[str, str] | None] = queue.Queue(QUEUE_SIZE)
        self._listening = False
        self._registration: Registration | None = None
        self._warned = False

    def channel(self, topic: str) -> str:
        return topic

    def publish(self, channel: str, payload: str, *, using: str) -> None:
        after_commit(lambda: self._put(channel, payload), using)

    def _put(self, channel: str, payload: str) -> None:
        self._counters.add("published")
        self._warn_once()
        if not self._listening:
            return  # nobody in this process listens; nobody else can hear
        try:
            self._queue.put_nowait((channel, payload))
        except queue.Full:
            self._counters.add("failures")

    def _warn_once(self) -> None:
        if self._warned or self._directory is None:
            return
        self._warned = True
        own = self._registration.path if self._registration else None
        if others := count_live(self._directory, exclude=own):
            logger.warning(
                SHARED_WARNING, f"{others} other process(es) listen on this database"
            )

    def listen(
        self, channels: Sequence[str], receiver: Receiver, stop: threading.Event
    ) -> None:
        if self._directory is not None:
            self._registration = Registration(self._directory)
            if others := self._registration.others():
                logger.warning(
                    SHARED_WARNING,
                    f"{others} other process(es) already listen on this database",
                )
        self._listening = True
        receiver.listening()
        try:
            while not stop.is_set():
                try:
                    item = self._queue.get(timeout=TICK_SECONDS)
                except queue.Empty:
                    continue
                if item is not None and item[0] in channels:
                    receiver.received(*item)
        finally:
            self._listening = False
            if self._registration is not None:
                self._registration.close()

    def wake(self) -> None:
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)

    def close(self) -> None:
        """Nothing to release."""

    def forget(self) -> None:
        """After a fork: the child drops the parent's registration."""
        if self._registration is not None:
            self._registration.forget()
