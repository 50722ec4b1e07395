"""Helpers for the change bus tests: services, recorders, waiting."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from mcp_gateway import bus
from tests.mcp_gateway.bus.peer import WAIT_SECONDS

REDIS_URL = "redis://127.0.0.1:6379/11"
"""The shared Redis server, in a database number no other test uses."""


def need(available: bool, reason: str) -> None:
    """Skip without the service, but fail under MCPGW_REQUIRE_SERVICES (CI)."""
    if available:
        return
    if os.environ.get("MCPGW_REQUIRE_SERVICES"):
        pytest.fail(f"{reason} (MCPGW_REQUIRE_SERVICES is set)")
    pytest.skip(reason)


def listening_on(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def need_redis() -> None:
    need(listening_on("127.0.0.1", 6379), "needs Redis on 127.0.0.1:6379")


def need_redis_server() -> str:
    path = shutil.which("redis-server")
    need(path is not None, "needs the redis-server program")
    assert path is not None
    return path


class Recorder:
    """A thread-safe callback that keeps what it was given."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self._changed = threading.Condition()

    def __call__(self, event: Any) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def wait_for(
        self, wanted: Callable[[Any], bool], timeout: float = WAIT_SECONDS
    ) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [event for event in self.events if wanted(event)]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"never received it; got {self.events}")
                self._changed.wait(left)

    def of(self, kind: type[Any]) -> list[Any]:
        with self._changed:
            return [event for event in self.events if isinstance(event, kind)]


def eventually(condition: Callable[[], object], what: str = "it") -> None:
    """Wait until ``condition()`` holds (a bound on waiting, not on speed)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def wait_listening() -> None:
    eventually(lambda: bus.stats().listening, "the bus listens")
