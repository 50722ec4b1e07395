"""A ``tools/call`` read as it streams, on its own thread: the questions the
server asks on the stream, then the result."""

from __future__ import annotations

import json
import queue
import threading
from typing import Any

import httpx2

from tests.live.events import events


class StreamedCall:
    """POST ``body`` to ``url`` and read the answer, JSON or SSE, in a
    thread; a server request on the stream (``method`` and ``id``) is a
    question (:meth:`question`)."""

    def __init__(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.questions: queue.Queue[dict[str, Any]] = queue.Queue()
        self.received: list[Any] = []
        self.content_type = ""
        self._request_id = body["id"]
        self._args = (url, body, headers)
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        url, body, sent = self._args
        with httpx2.stream("POST", url, json=body, headers=sent, timeout=60) as r:
            self.content_type = r.headers["content-type"]
            if self.content_type.startswith("application/json"):
                self.received.append(json.loads(r.read()))  # nothing streamed
                return
            for event in events(r):
                if event.data is None:
                    continue
                self.received.append(event.data)
                if "method" in event.data and "id" in event.data:
                    self.questions.put(event.data)

    def question(self) -> dict[str, Any]:
        return self.questions.get(timeout=30)

    def result(self) -> dict[str, Any]:
        self._thread.join(60)
        assert not self._thread.is_alive()
        final = self.received[-1]
        assert final["id"] == self._request_id
        return dict(final["result"])

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, seconds: float) -> None:
        self._thread.join(seconds)
