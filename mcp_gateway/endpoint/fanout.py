"""Open change streams of this process, fed from the change bus.

The process subscribes to the bus once (``CatalogChanged``,
``PrincipalChanged`` and their ``Resync``), however many streams are open:
one bus connection per process, never one per stream. The bus calls back on
its own thread; the hub picks the streams an event concerns and hands them a
flag on their event loop (``call_soon_threadsafe``, once per loop and
event), where each stream's loop (``endpoint.listen``) turns a raised flag
into at most one notification per ``COALESCE_SECONDS``.

Caps: ``MAX_LISTENERS_PER_TENANT`` and ``MAX_LISTENERS_PER_PROCESS`` open
streams (``Full`` names the cap reached); :func:`close_all` ends every
stream at a worker's shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

from mcp_gateway import bus
from mcp_gateway.conf import gateway_settings
from mcp_gateway.observability import metrics

COALESCE_SECONDS = 0.25
"""A stream sends at most one ``list_changed`` per this many seconds."""
TENANT_CAP, PROCESS_CAP = "MAX_LISTENERS_PER_TENANT", "MAX_LISTENERS_PER_PROCESS"


class Full(Exception):
    """No room for another stream; ``cap`` names the setting reached."""

    def __init__(self, cap: str, limit: int) -> None:
        super().__init__(f"Too many open change streams ({cap} = {limit}).")
        self.cap = cap
        self.limit = limit


class Listener:
    """One open stream: what it listens for, and its flags (loop thread only)."""

    def __init__(self, tenant: int, user: Any, token: str | None) -> None:
        self.tenant = tenant
        self.user = user
        self.token = token
        self.loop = asyncio.get_running_loop()
        self.changed = False
        """The tenant's catalog (or what this principal sees) changed."""
        self.recheck = False
        """Something about principals changed: verify this one is still valid."""
        self.closed = False
        self.wake = asyncio.Event()

    def raise_flags(self, *, changed: bool, recheck: bool) -> None:
        self.changed = self.changed or changed
        self.recheck = self.recheck or recheck
        self.wake.set()

    def close(self) -> None:
        self.closed = True
        self.wake.set()

    def concerned_by(self, event: bus.PrincipalChanged) -> bool:
        """Whether a principal change may concern this stream's principal."""
        if event.tenant is not None and event.tenant != self.tenant:
            return False
        if event.token is not None:
            return event.token == self.token
        return event.user is None or str(event.user) == str(self.user)


class Hub:
    """This process's open streams, by tenant; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_tenant: dict[int, set[Listener]] = defaultdict(set)
        self._count = 0
        self._subscriptions: list[bus.Subscription] = []
        self._shutdown_hooked = False

    def open(self, listener: Listener, tenant_slug: str) -> None:
        """Register ``listener``, subscribing to the bus on first use.

        Raises:
            Full: a cap is reached; nothing was registered.
        """
        settings = gateway_settings()
        with self._lock:
            if self._count >= settings.MAX_LISTENERS_PER_PROCESS:
                raise Full(PROCESS_CAP, settings.MAX_LISTENERS_PER_PROCESS)
            streams = self._by_tenant[listener.tenant]
            if len(streams) >= settings.MAX_LISTENERS_PER_TENANT:
                raise Full(TENANT_CAP, settings.MAX_LISTENERS_PER_TENANT)
            streams.add(listener)
            self._count += 1
            if not self._shutdown_hooked:
                self._shutdown_hooked = _hook_shutdown(listener.loop)
            if not self._subscribed():
                self._subscriptions = [
                    bus.subscribe(bus.CatalogChanged, self._on_catalog),
                    bus.subscribe(bus.PrincipalChanged, self._on_principal),
                ]
        metrics.stream_opened(tenant_slug, 1)

    def _subscribed(self) -> bool:
        """Whether this hub's bus subscriptions are live (a closed bus ends them)."""
        subscriptions = self._subscriptions
        return bool(subscriptions) and all(s.active for s in subscriptions)

    def release(self, listener: Listener, tenant_slug: str) -> None:
        """Forget ``listener`` (idempotent)."""
        with self._lock:
            streams = self._by_tenant.get(listener.tenant)
            if streams is None or listener not in streams:
                return
            streams.discard(listener)
            if not streams:
                del self._by_tenant[listener.tenant]
            self._count -= 1
        metrics.stream_opened(tenant_slug, -1)

    def count(self, tenant: int | None = None) -> int:
        with self._lock:
            if tenant is None:
                return self._count
            return len(self._by_tenant.get(tenant, ()))

    def close_all(self) -> None:
        """End every open stream (shutdown): each ends at its next wake-up."""
        for listener in self._snapshot(None):
            _hand(listener.loop, [listener], close=True)

    # -- Bus callbacks: the bus's thread ---------------------------------------

    def _on_catalog(self, event: bus.CatalogChanged | bus.Resync) -> None:
        tenant = None if isinstance(event, bus.Resync) else event.tenant
        self._notify(self._snapshot(tenant), changed=True, recheck=False)

    def _on_principal(self, event: bus.PrincipalChanged | bus.Resync) -> None:
        if isinstance(event, bus.Resync):
            self._notify(self._snapshot(None), changed=True, recheck=True)
            return
        tenant = event.tenant
        concerned = [ls for ls in self._snapshot(tenant) if ls.concerned_by(event)]
        # What the principal sees may have changed too (groups, membership).
        self._notify(concerned, changed=True, recheck=True)

    def _snapshot(self, tenant: int | None) -> list[Listener]:
        with self._lock:
            if tenant is not None:
                return list(self._by_tenant.get(tenant, ()))
            return [ls for streams in self._by_tenant.values() for ls in streams]

    def _notify(
        self, listeners: Iterable[Listener], *, changed: bool, recheck: bool
    ) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[Listener]] = defaultdict(list)
        for listener in listeners:
            by_loop[listener.loop].append(listener)
        for loop, group in by_loop.items():
            _hand(loop, group, changed=changed, recheck=recheck)


def _hand(
    loop: asyncio.AbstractEventLoop,
    listeners: list[Listener],
    *,
    changed: bool = False,
    recheck: bool = False,
    close: bool = False,
) -> None:
    def on_loop() -> None:
        for listener in listeners:
            if close:
                listener.close()
            else:
                listener.raise_flags(changed=changed, recheck=recheck)

    with contextlib.suppress(RuntimeError):  # a closed loop: its streams are gone
        loop.call_soon_threadsafe(on_loop)


def _hook_shutdown(loop: asyncio.AbstractEventLoop) -> bool:
    """End every stream when the server is told to stop (SIGTERM, SIGINT).

    ASGI servers wait for open responses before they exit, and Django has no
    shutdown hook of its own; so the server's own handler is chained, and
    the streams end gracefully (the listen result, then the end of the body)
    while the server drains. Only the main thread may set handlers; the
    handler only schedules (a signal may interrupt a held lock).
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    for number in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(number)
        if callable(previous):
            signal.signal(number, _chained(loop, previous))
    return True


def _chained(
    loop: asyncio.AbstractEventLoop, previous: Callable[[int, FrameType | None], Any]
) -> Callable[[int, FrameType | None], None]:
    def on_signal(number: int, frame: FrameType | None) -> None:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_hub.close_all)
        previous(number, frame)

    return on_signal


_hub = Hub()


def hub() -> Hub:
    """This process's hub."""
    return _hub
