"""The one bus of this process, and its life across forks and settings.

The bus of a process is created on first use. A bus belongs to the process
that created it: after ``fork`` the child builds its own (new process id,
new connection, the inherited subscriptions re-registered and told to
resync) and never touches the parent's connection.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from mcp_gateway.bus import backends
from mcp_gateway.bus.core import Bus, Subscription

logger = logging.getLogger("mcp_gateway.bus")

_bus: Bus | None = None
_guard = threading.Lock()
_orphans: list[Bus] = []
"""Buses inherited through ``fork``: kept, never closed, never used."""
_adopt: list[Subscription] = []
"""Subscriptions waiting for the next bus (after a settings change)."""


def current() -> Bus:
    """This process's bus, created (not started) on first use."""
    global _bus
    bus = _bus
    if bus is not None and bus.pid == os.getpid():
        return bus
    with _guard:
        if _bus is None or _bus.pid != os.getpid():
            if _bus is not None:
                _orphans.append(_bus)
            _bus = Bus(_adopt)
            _adopt.clear()
        if _bus._subscriptions:
            _bus.start()
        return _bus


def peek() -> Bus | None:
    """This process's bus if it exists; creates nothing."""
    bus = _bus
    return bus if bus is not None and bus.pid == os.getpid() else None


def close() -> None:
    """Stop and forget this process's bus; its subscriptions end."""
    global _bus
    with _guard:
        bus, _bus = peek(), None
        ended, _adopt[:] = list(_adopt), []
    if bus is not None:
        ended += bus.close()
    for subscription in ended:
        subscription.active = False


def _rebuild(bus: Bus) -> None:
    """Replace a bus, keeping its subscriptions (they resync)."""
    global _bus
    with _guard:
        if _bus is bus:
            _bus = None
    _adopt.extend(bus.close())
    if _adopt:
        # Refused settings: the first bus they allow adopts the subscriptions.
        with contextlib.suppress(ImproperlyConfigured):
            current()


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: object) -> None:
    if setting not in ("MCP_GATEWAY", "CACHES", "DATABASES"):
        return
    bus = peek()
    if bus is None:
        return
    try:
        unchanged = backends.plan() == bus.plan
    except ImproperlyConfigured:
        unchanged = False
    if not unchanged:
        _rebuild(bus)


def _after_fork_in_child() -> None:
    global _bus, _guard
    _guard = threading.Lock()  # another thread may have held it at fork
    parent, _bus = _bus, None
    if parent is None:
        return
    _orphans.append(parent)  # its connection is the parent's: never close it
    forget = getattr(parent.transport, "forget", None)
    if forget is not None:
        forget()
    _adopt[:] = [s for s in parent._subscriptions if s.active]
    if _adopt:
        try:
            current()  # the child listens for the subscriptions it inherited
        except Exception:  # never break a fork; the next use retries
            logger.exception("The change bus could not start after a fork.")


def _at_exit() -> None:
    if (bus := peek()) is not None:
        bus.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_at_exit)
