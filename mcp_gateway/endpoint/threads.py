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
a busy thread to the next; the thread counts its work, so giving it back
costs no hop of its own.

The fast path (``fastpath``) sends ``request_started`` in the request's
first hop rather than in a hop of its own (:func:`defer_request_started`,
:func:`send_request_started`), and when the view answers in that hop, the
response is finished there too (its middleware hooks, ``close()`` and so
``request_finished``: :func:`finish_in_hop`, :func:`finished_here`), so a
warm request makes one hop in all.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, cast

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core import signals
from django.http import HttpResponseBase

IDLE_KEPT = 32
"""Idle threads kept for the next requests; more are shut down."""


class RequestThread(ThreadPoolExecutor):
    """One thread, which knows when all the work it was handed is done."""

    def __init__(self) -> None:
        super().__init__(1, thread_name_prefix="mcp-request")
        self._lock = threading.Lock()
        self._pending = 0
        self._when_idle: Callable[[], None] | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:  # type: ignore[type-arg]
        with self._lock:
            self._pending += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._done(None)
            raise
        future.add_done_callback(self._done)
        return future

    def when_idle(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once no work is left: now, or from the thread."""
        with self._lock:
            if self._pending:
                self._when_idle = callback
                return
        callback()

    def _done(self, _: object) -> None:
        with self._lock:
            self._pending -= 1
            callback = self._when_idle if self._pending == 0 else None
            if callback is not None:
                self._when_idle = None
        if callback is not None:
            callback()


class RequestThreads:
    def __init__(self, keep: int = IDLE_KEPT) -> None:
        self._idle: list[RequestThread] = []
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
            executor = RequestThread()
        try:
            async with ThreadSensitiveContext(executor=executor):
                yield
        finally:
            self._give_back(executor)

    def _give_back(self, executor: RequestThread) -> None:
        """Idle again once the thread has finished all it was given: a hop
        whose request was cancelled may still be running there."""
        if len(self._idle) >= self._keep:
            executor.shutdown(wait=False)
            return
        executor.when_idle(lambda: self._idle.append(executor))


# -- request_started in the first hop -------------------------------------------------


class _Started:
    """A ``request_started`` owed to the request, sent once."""

    __slots__ = ("_lock", "scope", "sender", "sent")

    def __init__(self, sender: type, scope: dict[str, Any]) -> None:
        self.sender, self.scope, self.sent = sender, scope, False
        self._lock = threading.Lock()

    def send(self) -> None:
        with self._lock:
            owed, self.sent = not self.sent, True
        if owed:
            signals.request_started.send(sender=self.sender, scope=self.scope)

    async def asend(self) -> None:
        """What is still owed, sent in the request's thread: queued behind a
        hop still running there (a cancelled admission), never beside it."""
        if not self.sent:
            await sync_to_async(self.send)()


_owed: ContextVar[_Started | None] = ContextVar("mcp_request_started", default=None)


@contextmanager
def defer_request_started(sender: type, scope: dict[str, Any]) -> Iterator[_Started]:
    """Owe this request's ``request_started`` to its first hop (the tasks
    created in the block see it); the caller sends what is still owed at the
    end (``asend``), so the signal is sent once in any case. Once the block
    is left, nothing is owed: a later request in the same context (a server
    may serve a connection's requests in one task) sees none of it."""
    owed = _Started(sender, scope)
    token = _owed.set(owed)
    try:
        yield owed
    finally:
        _owed.reset(token)


def send_request_started_again() -> None:
    """Owe the request's ``request_started`` once more: the view began the
    request on the loop and now serves it in its thread (``endpoint.onloop``),
    whose work must follow the signal's receivers as any request's does."""
    owed = _owed.get()
    if owed is not None:
        with owed._lock:
            owed.sent = False


def send_request_started() -> None:
    """In the request's thread, before its first database work: the
    ``request_started`` the fast path deferred, if still owed (its receivers,
    ``close_old_connections`` among them, run in that thread as they would
    in a hop of their own)."""
    owed = _owed.get()
    if owed is not None:
        owed.send()


# -- The response finished in the view's hop ------------------------------------------


class Finisher:
    """Finishes a response in the request's thread (the fast path's response
    hooks, then its logging and ``close()``), at most once, unless the loop
    has claimed the request's end first (a request cancelled while its hop
    ran)."""

    __slots__ = ("_close", "_finish", "_lock", "_state", "error", "finished")

    def __init__(
        self, finish: Callable[[Any], Any], close: Callable[[Any], None]
    ) -> None:
        self._finish = finish
        self._close = close
        self._lock = threading.Lock()
        self._state: str | None = None
        self.finished: Any = None
        """The finished response, once :meth:`finish` has run."""
        self.error: Exception | None = None
        """What closing it raised (a ``request_finished`` receiver's error):
        the fast path raises it once the answer is sent, as Django's handler
        raises an error of ``close()``."""

    def finish(self, response: Any) -> Any:
        """``response`` finished; as it is if the loop claimed the end."""
        with self._lock:
            if self._state is not None:
                return response
            self._state = "finishing"
        try:
            self.finished = self._finish(response)
        except BaseException:
            with self._lock:  # not finished: the request's end is the loop's
                self._state = None
            raise
        try:
            self._close(self.finished)
        except Exception as exc:
            self.error = exc
        return self.finished

    def claim(self) -> bool:
        """For the loop: whether the request's end is still its own (no
        response was, or will be, finished in the hop)."""
        with self._lock:
            if self._state is None:
                self._state = "claimed"
            return self._state == "claimed"


_finisher: ContextVar[Finisher | None] = ContextVar("mcp_finisher", default=None)


@contextmanager
def finish_in_hop(
    finish: Callable[[Any], Any], close: Callable[[Any], None]
) -> Iterator[Finisher]:
    """Let the view finish its response in its own hop (:func:`finished_here`)
    with ``finish``, then ``close``: the block's tasks see it; once left,
    nothing is offered."""
    finisher = Finisher(finish, close)
    token = _finisher.set(finisher)
    try:
        yield finisher
    finally:
        _finisher.reset(token)


def finishing() -> bool:
    """Whether the view finishes its own response (the ASGI fast path)."""
    return _finisher.get() is not None


def finished_here(response: HttpResponseBase) -> HttpResponseBase:
    """In the request's thread: ``response``, finished by the fast path's
    finisher if there is one (then it must be sent as it is), else as it is."""
    finisher = _finisher.get()
    if finisher is None or response.streaming:
        return response
    return cast(HttpResponseBase, finisher.finish(response))
