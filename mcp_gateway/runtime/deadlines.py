"""Engine deadlines, and the bounded thread pool sync engines run in.

A Python thread cannot be killed: past its deadline a sync engine is told
through its context's signal and abandoned, its thread counted and logged,
and the caller answered at once. The pool never queues: when every thread
is busy, a call is refused (``PoolFull``) rather than left waiting.

A sync engine called inside a database transaction of the request's thread
(``ATOMIC_REQUESTS``, or a test's transaction) runs in that thread instead,
so it shares the transaction; its deadline is then cooperative only. So does
an engine that declares ``blocking = False`` (it never waits, and returns in
microseconds): a thread hop would cost more than the engine itself.

From sync code a caller may also hand over ``client_gone``, a probe of its
client's connection: while the engine runs it is asked every
``POLL_SECONDS``; once the client has gone the engine's signal is cancelled,
the wait lasts until the engine returns (or its deadline), and the call ends
in ``CallerGone`` instead of an answer no one would read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import anyio
from django.db import close_old_connections, connections

from engines_app.context import EngineContext
from mcp_gateway.conf import gateway_settings
from mcp_gateway.observability import metrics
from mcp_gateway.runtime.loop import run_sync_outside_loop

logger = logging.getLogger("mcp_gateway")

_inline: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mcp_gateway_inline_sync_engines", default=False
)


class DeadlineExceeded(Exception):
    """The engine was still running at its deadline."""


class PoolFull(Exception):
    """Every engine thread is busy."""


class CallerGone(Exception):
    """The client went away while the engine ran; it was told to stop."""


POLL_SECONDS = 0.1
"""How often a sync caller's ``client_gone`` is asked while an engine runs."""

ClientGone = Callable[[], bool]
"""Whether the client of the call has gone away (a closed connection)."""


def blocks(engine: Any) -> bool:
    """Whether a sync engine needs the pool (all but ``blocking = False``)."""
    return getattr(engine, "blocking", True) is not False


def deadline_for(engine: Any) -> float | None:
    """The engine's own ``deadline_seconds``, else the setting's."""
    own = getattr(engine, "deadline_seconds", None)
    if isinstance(own, int | float) and not isinstance(own, bool) and own > 0:
        return float(own)
    return gateway_settings().ENGINE_DEADLINE_SECONDS


class EnginePool:
    """A fixed number of threads; ``submit`` refuses when all are taken."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.abandoned = 0
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=size, thread_name_prefix="mcp-engine"
        )
        metrics.pool_sized(size)  # pool gauges

    def submit(
        self, function: Callable[[EngineContext], Any], context: EngineContext
    ) -> concurrent.futures.Future[Any]:
        """Run ``function(context)`` in a free thread.

        Raises:
            PoolFull: no thread is free.
        """
        if not self._slots.acquire(blocking=False):
            raise PoolFull
        metrics.pool_handed()  # pool gauges
        run = contextvars.copy_context().run
        return self._executor.submit(run, self._run, function, context)

    def abandon(self, engine_id: str) -> None:
        with self._lock:
            self.abandoned += 1
            count = self.abandoned
        logger.warning(
            "Engine %r passed its deadline; its thread is abandoned "
            "(%d abandoned in this process).",
            engine_id,
            count,
        )

    def _run(self, function: Callable[[EngineContext], Any], context: Any) -> Any:
        metrics.pool_queued(-1)  # pool gauges
        try:
            return function(context)
        finally:
            try:
                close_old_connections()  # this thread's own connections
            finally:  # a failing close must not keep the slot
                self._slots.release()
                metrics.pool_taken(-1)  # pool gauges


_pool: list[EnginePool] = []
_pool_lock = threading.Lock()


def engine_pool() -> EnginePool:
    """This process's pool, sized by ``ENGINE_THREADS``."""
    size = max(1, gateway_settings().ENGINE_THREADS)
    with _pool_lock:
        if not _pool or _pool[0].size != size:
            _pool[:] = [EnginePool(size)]
        return _pool[0]


async def arun_sync(engine: Any, context: EngineContext) -> Any:
    """Run a sync engine from async code: the pool, awaited until its deadline.

    Inside a transaction of the sync caller's thread (``request_thread``) the
    engine runs in that thread, outside the loop.

    Raises:
        DeadlineExceeded: the deadline passed first (the signal is cancelled).
        PoolFull: no engine thread is free.
    """
    with _classified(context):
        if not blocks(engine):
            return engine.execute(context)
        if _inline.get():
            return await run_sync_outside_loop(engine.execute, context)
        pool = engine_pool()
        waiting = asyncio.wrap_future(pool.submit(engine.execute, context))
        waiting.add_done_callback(_retrieve)  # an abandoned run may still fail
        remaining = context.signal.remaining()
        with anyio.move_on_after(float("inf") if remaining is None else remaining):
            # shield: a cancelled wait must not cancel a queued run, leak a slot
            return await asyncio.shield(waiting)
    _abandon(pool, engine, context)


def run_sync(
    engine: Any, context: EngineContext, client_gone: ClientGone | None = None
) -> Any:
    """Run a sync engine from sync code (WSGI): the pool, a blocking wait.

    Same rules as :func:`arun_sync`: inside a transaction of this thread the
    engine runs here; otherwise in the pool until its deadline, and, with
    ``client_gone``, until the client goes away.

    Raises:
        DeadlineExceeded: the deadline passed first (the signal is cancelled).
        PoolFull: no engine thread is free.
        CallerGone: the client went away first (the signal is cancelled).
    """
    with _classified(context):
        if not blocks(engine) or in_transaction():
            return engine.execute(context)
        pool = engine_pool()
        running = pool.submit(engine.execute, context)
        if client_gone is not None:
            _watch(pool, engine, context, running, client_gone)
        try:
            return running.result(timeout=context.signal.remaining())
        except TimeoutError:
            if running.done():
                raise  # the engine's own TimeoutError
    running.add_done_callback(_retrieve)  # an abandoned run may still fail
    _abandon(pool, engine, context)


def _watch(
    pool: EnginePool,
    engine: Any,
    context: EngineContext,
    running: concurrent.futures.Future[Any],
    client_gone: ClientGone,
) -> None:
    """Wait while the engine runs, asking after the client between slices.

    Returns once the engine is done or its deadline is less than a slice
    away; the first slice goes by before the client is asked at all.

    Raises:
        CallerGone: the client went away (the engine is told, then waited
            for until it returns or its deadline passes).
    """
    while not _settled(running, context):
        if client_gone():
            context.signal.cancel()
            done, _ = concurrent.futures.wait(
                [running], timeout=context.signal.remaining()
            )
            if not done:
                running.add_done_callback(_retrieve)
                pool.abandon(str(getattr(engine, "id", engine)))
            raise CallerGone


def _settled(running: concurrent.futures.Future[Any], context: EngineContext) -> bool:
    remaining = context.signal.remaining()
    if remaining is not None and remaining <= POLL_SECONDS:
        return True
    done, _ = concurrent.futures.wait([running], timeout=POLL_SECONDS)
    return bool(done)


def _abandon(pool: EnginePool, engine: Any, context: EngineContext) -> NoReturn:
    """Past the deadline: tell the engine, count its thread, time out.

    Raises:
        DeadlineExceeded: always.
    """
    context.signal.cancel()
    pool.abandon(str(getattr(engine, "id", engine)))
    raise DeadlineExceeded


@contextlib.contextmanager
def _classified(context: EngineContext) -> Iterator[None]:
    """An engine failing once its deadline has passed timed out.

    The engine sees its deadline through its signal at the very moment the
    wait for it ends; whichever notices first, the outcome is a timeout,
    never the engine's own reaction to the deadline (``CANCELLED``, say).
    A cancellation by the caller is no deadline: it stays a cancellation.
    """
    try:
        yield
    except (DeadlineExceeded, PoolFull, CallerGone):
        raise
    except Exception as exc:
        if context.signal.deadline is not None and context.signal.remaining() == 0:
            raise DeadlineExceeded from exc
        raise


@contextlib.contextmanager
def request_thread() -> Iterator[None]:
    """Note, for the engines a sync caller runs, whether it is in a transaction.

    Read here, in the caller's thread: the event loop that serves the call
    sees its own database connections, not this thread's.
    """
    token = _inline.set(in_transaction())
    try:
        yield
    finally:
        _inline.reset(token)


def in_transaction() -> bool:
    """Whether this thread's database work is inside an atomic block."""
    return any(
        connection.in_atomic_block
        for connection in connections.all(initialized_only=True)
    )


def _retrieve(future: asyncio.Future[Any] | concurrent.futures.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
