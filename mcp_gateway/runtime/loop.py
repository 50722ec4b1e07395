"""The thread loop: async code driven from sync (WSGI) callers.

One persistent event loop per thread, and sync work a coroutine hands back
(:func:`run_sync_outside_loop`) runs in the calling thread while the loop is
stopped, where the ORM is allowed. Under ASGI (a running loop) the same sync
work runs in the request's thread-sensitive thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from asgiref.sync import sync_to_async

T = TypeVar("T")

_local = threading.local()
_bridge: contextvars.ContextVar[_Bridge] = contextvars.ContextVar("mcp_gateway_bridge")


class _Bridge:
    """Sync calls a coroutine parked for the thread that drives its loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.parked: list[tuple[Callable[[], Any], asyncio.Future[Any]]] = []
        self.wake: asyncio.Future[None] = loop.create_future()

    def park(self, function: Callable[[], T]) -> asyncio.Future[T]:
        resume: asyncio.Future[T] = self.loop.create_future()
        self.parked.append((function, resume))
        self.wake_up()
        return resume

    def wake_up(self, *_: object) -> None:
        if not self.wake.done():
            self.wake.set_result(None)

    def run_parked(self) -> None:
        """Run the parked calls here, outside the (stopped) loop."""
        parked, self.parked = self.parked, []
        self.wake = self.loop.create_future()
        for function, resume in parked:
            if resume.cancelled():
                continue  # its awaiter is gone; nobody would read the result
            try:
                resume.set_result(function())
            except Exception as exc:
                resume.set_exception(exc)


async def run_sync_outside_loop(function: Callable[..., T], *args: Any) -> T:
    """Run a sync callable off the event loop and await its result.

    Under :func:`run_in_thread_loop` it runs in the driving thread while the
    loop is stopped (so Django's ORM works there); elsewhere (ASGI) in the
    request's thread-sensitive thread, where Django closes the database
    connections it opens when the request finishes.
    """
    bridge = _bridge.get(None)
    if bridge is None or bridge.loop is not asyncio.get_running_loop():
        return await sync_to_async(function, thread_sensitive=True)(*args)
    return await bridge.park(functools.partial(function, *args))


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _local.loop = loop
    return loop


def run_in_thread_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on this thread's persistent event loop.

    Raises:
        RuntimeError: called from a thread whose event loop is running (use
            the async twin there).
    """
    run = Resumable(coroutine)
    try:
        run.step(None, _never)
        return run.result()
    finally:
        run.cancel()  # only if it did not finish (an interrupt)


def _never() -> bool:
    return False


class Resumable(Generic[T]):
    """A coroutine on this thread's loop, run in steps.

    Between steps the loop is stopped and the thread is free: a sync server
    writes part of its answer (a question on an SSE stream) and runs the
    coroutine on when it may. Sync work the coroutine hands back
    (:func:`run_sync_outside_loop`) runs in this thread during a step.
    """

    def __init__(self, coroutine: Coroutine[Any, Any, T]) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coroutine.close()
            raise RuntimeError(
                "Called from a running event loop; await the async twin."
            )
        self._loop = _thread_loop()
        self._bridge = _Bridge(self._loop)
        context = contextvars.copy_context()
        context.run(_bridge.set, self._bridge)
        self._task = self._loop.create_task(coroutine, context=context)
        self._task.add_done_callback(self._bridge.wake_up)

    @property
    def done(self) -> bool:
        return self._task.done()

    def interrupt(self) -> None:
        """End the current step (from the coroutine's side, on the loop)."""
        self._bridge.wake_up()

    def step(self, seconds: float | None, until: Callable[[], bool]) -> bool:
        """Run until the coroutine is done (True), or ``until()`` holds or
        ``seconds`` pass (False)."""
        loop, bridge = self._loop, self._bridge
        end = None if seconds is None else loop.time() + seconds
        while not self._task.done():
            if until():
                return False
            if bridge.parked:
                bridge.run_parked()
                continue
            remaining = None if end is None else end - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            if bridge.wake.done():
                bridge.wake = loop.create_future()
            timer = (
                None
                if remaining is None
                else loop.call_later(remaining, bridge.wake_up)
            )
            try:
                loop.run_until_complete(bridge.wake)
            finally:
                if timer is not None:
                    timer.cancel()
        return True

    def result(self) -> T:
        """The coroutine's result (or its exception); only once it is done."""
        return self._task.result()

    def cancel(self) -> None:
        """Cancel the coroutine and run it until it has finished."""
        if not self._task.done():
            self._task.cancel()
            self.step(None, _never)
        if not self._task.cancelled():
            self._task.exception()  # retrieved: nothing to log
