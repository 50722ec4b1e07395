"""The request threads under ASGI: one thread per request at a time, reused.

Django's ASGI handler runs each request's sync work (every
``MiddlewareMixin`` hook, the request signals, the endpoint's admission and
audit write) in one thread of the request's own, through a
``ThreadSensitiveContext``: a new thread started for the request's first
hop and joined, from yet another new thread, when it ends. Two thread
starts per request cost more CPU than the gateway's whole answer.

:class:`RequestThreads` keeps those threads: a request takes an idle
single-thread executor (or makes one), runs in a ``ThreadSensitiveContext``
bound to it, and gives it back when it ends. A thread still serves one
request at a time, as under Django's own handler, so the database
connection a request opens in it is that request's alone until
``request_finished`` closes it (or hands it back to the pool), as a reused
WSGI thread does. A thread goes back to the idle list only once all the
work it was handed is done, so a request cancelled during a hop never lends
a busy thread to the next.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from asgiref.sync import ThreadSensitiveContext

IDLE_KEPT = 32
"""Idle threads kept for the next requests; more are shut down."""


class RequestThreads:
    def __init__(self, keep: int = IDLE_KEPT) -> None:
        self._idle: list[ThreadPoolExecutor] = []
        self._keep = keep

    @property
    def idle(self) -> int:
        """Threads waiting for a request."""
        return len(self._idle)

    @asynccontextmanager
    async def request(self) -> AsyncIterator[None]:
        """Run the block's thread-sensitive work in a thread of its own."""
        try:
            executor = self._idle.pop()
        except IndexError:
            executor = ThreadPoolExecutor(1, thread_name_prefix="mcp-request")
        try:
            async with ThreadSensitiveContext(executor=executor):
                yield
        finally:
            self._give_back(executor)

    def _give_back(self, executor: ThreadPoolExecutor) -> None:
        """Idle again once the thread has finished all it was given: a hop
        whose request was cancelled may still be running there."""
        if len(self._idle) >= self._keep:
            executor.shutdown(wait=False)
            return
        executor.submit(_nothing).add_done_callback(
            lambda _: self._idle.append(executor)
        )


def _nothing() -> None:
    return None
