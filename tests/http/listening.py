"""A change-stream client over raw HTTP, read on its own thread."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx2

from tests.live.events import Event, events
from tests.live.servers import Server

MODERN = "2026-07-28"
META = "io.modelcontextprotocol/"
LIST_CHANGED = "notifications/tools/list_changed"


def listen_body(request_id: Any = "sub-1", **notifications: Any) -> dict[str, Any]:
    """A 2026-07-28 ``subscriptions/listen`` request."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {
            "notifications": notifications or {"toolsListChanged": True},
            "_meta": {
                f"{META}protocolVersion": MODERN,
                f"{META}clientInfo": {"name": "raw", "version": "1"},
                f"{META}clientCapabilities": {},
            },
        },
    }


def modern_headers(secret: str, method: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }


def wait_ready(server: Server, timeout: float = 15.0) -> None:
    """Wait until the server's ``/readyz`` answers 200."""
    deadline = time.monotonic() + timeout
    while httpx2.get(f"{server.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline, f"{server.url} never got ready"
        time.sleep(0.05)


def prime(server: Server, secret: str, slug: str = "acme") -> None:
    """Have a one-process server's bus listening before a test's stream opens.

    The first stream a process opens subscribes it to the bus (once), and
    its bus connects in the background; ``/readyz`` is 200 once it listens
    (before a bus starts it is 200 too, hence the stream first). A stream
    opened afterwards hears every change made after it opened, and no
    ``Resync`` of its own: each ``list_changed`` it gets is a change's.
    """
    with Stream(server, secret, modern=False, slug=slug) as stream:
        assert stream.status == 200, stream.body
        wait_ready(server)


class Stream:
    """One open change stream; its events arrive in ``events`` as they come."""

    def __init__(
        self, server: Server, secret: str, *, modern: bool, slug: str = "acme"
    ) -> None:
        self.url = f"{server.url}/t/{slug}/mcp"
        self.secret = secret
        self.modern = modern
        self.events: list[Event] = []
        self.status: int | None = None
        self.body: Any = None
        self.broken = False
        self.ended = threading.Event()
        self._started = threading.Event()
        self._changed = threading.Condition()
        self._client = httpx2.Client(timeout=httpx2.Timeout(30, read=60))
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> Stream:
        self._thread.start()
        assert self._started.wait(15), "the stream never answered"
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()
        self._thread.join(5)

    def _request(self) -> Any:
        if self.modern:
            headers = modern_headers(self.secret, "subscriptions/listen")
            return self._client.stream(
                "POST", self.url, json=listen_body(), headers=headers
            )
        headers = {
            "Authorization": f"Bearer {self.secret}",
            "Accept": "text/event-stream",
        }
        return self._client.stream("GET", self.url, headers=headers)

    def _read(self) -> None:
        try:
            with self._request() as response:
                self.status = response.status_code
                if not response.headers.get("content-type", "").startswith(
                    "text/event-stream"
                ):
                    self.body = response.read()
                    self._started.set()
                    return
                self._started.set()
                for event in events(response):
                    with self._changed:
                        self.events.append(event)
                        self._changed.notify_all()
        except httpx2.HTTPError:  # the test closed the client, or the server ended
            self.broken = True
        finally:
            self._started.set()
            self.ended.set()
            with self._changed:
                self._changed.notify_all()

    def messages(self, method: str | None = None) -> list[dict[str, Any]]:
        with self._changed:
            found = [e.data for e in self.events if e.data is not None]
        return [m for m in found if method is None or m.get("method") == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 5.0) -> float:
        """Wait until ``count`` messages of ``method`` came; when the last did."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.messages(method)) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"no {method} in time; got {self.events}"
                self._changed.wait(left)
        return time.monotonic()
