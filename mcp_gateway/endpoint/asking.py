"""A 2025 call's questions under WSGI: the answer becomes an SSE stream.

A ``tools/call`` on a 2025 revision that defines ``elicitation/create``,
whose client accepts ``text/event-stream``, runs as any sync call: its
engine in the pool, its answer plain JSON. Only when there is a question
to ask (the engine's own, or the gateway's confirmation) does the rest of
the call (``core.Pending``) run on this thread's event loop in steps
(``loop.Resumable``). The view then returns a stream: the question, keep-alive
comments while the client thinks, the result, end. The client's answer may
reach any worker of any host; it comes back through the change bus
(``dispatch.asking``), its ``notifications/cancelled`` the same way.

The worker is held while it waits, until the engine's deadline at most, as
it is while a sync engine runs. A client that closes its connection
cancels the call (as under ASGI): gunicorn's socket is watched between
steps, and the stream's end (a failed write) cancels it too.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse

from mcp_gateway import jsonrpc
from mcp_gateway.audit import log as audit
from mcp_gateway.conf import gateway_settings
from mcp_gateway.dispatch import asking
from mcp_gateway.dispatch.core import Pending, handle_asking
from mcp_gateway.dispatch.era import version_header
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.endpoint import sse
from mcp_gateway.runtime import deadlines
from mcp_gateway.runtime.loop import Resumable

logger = logging.getLogger("mcp_gateway")

_WATCH_SECONDS = 0.25
"""How often a waiting stream looks whether its client has gone."""


def can_ask(request: HttpRequest, message: jsonrpc.Message) -> bool:
    """Whether this call's answer could carry a question: a ``tools/call``
    on a 2025 asking revision whose client accepts an SSE stream."""
    return (
        message.payload["method"] == "tools/call"
        and version_header(request.headers) in asking.ASKING_VERSIONS
        and sse.accepts_event_stream(request.headers.get("Accept", ""))
    )


class Outbox:
    """The questions of one call, queued on the loop for the stream."""

    def __init__(self) -> None:
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self.interrupt: Callable[[], None] | None = None

    def put(self, message: dict[str, Any]) -> None:
        self._queue.append(message)
        if self.interrupt is not None:
            self.interrupt()

    def pending(self) -> bool:
        return bool(self._queue)

    def drain(self) -> list[dict[str, Any]]:
        taken = list(self._queue)
        self._queue.clear()
        return taken


def answer(scope: CallScope, message: jsonrpc.Message) -> Outcome | HttpResponseBase:
    """The call's outcome when nothing was asked (plain JSON; the caller
    writes its audit row), else its stream (which writes the row).

    Raises:
        DatabaseError: the database failed before anything was asked.
        deadlines.CallerGone: the client went away while the engine ran.
    """
    outbox = Outbox()
    asker = asking.Asker(scope.tenant.pk, scope.principal, outbox.put)
    scope = dataclasses.replace(scope, elicit=asker.ask)
    answered = handle_asking(message.payload, scope)
    if not isinstance(answered, Pending):
        return answered
    with deadlines.request_thread():
        rest = Resumable(answered.rest)
    outbox.interrupt = rest.interrupt
    try:
        done = rest.step(None, outbox.pending)
    except BaseException:
        rest.cancel()
        raise
    if done and not outbox.pending():
        return rest.result()
    events = _events(rest, outbox, scope, message.id)
    return StreamingHttpResponse(events, headers=sse.HEADERS)


def _events(
    rest: Resumable[Outcome], outbox: Outbox, scope: CallScope, request_id: object
) -> Iterator[bytes]:
    """The questions, keep-alives while waiting, the result; the audit row
    is written when the call ends, cancelled if the client went away."""
    gone = scope.client_gone
    keepalive = gateway_settings().SSE_KEEPALIVE_SECONDS
    try:
        while True:
            for question in outbox.drain():
                yield sse.event(question)
            if rest.done:
                break
            quiet = time.monotonic()
            while not rest.step(_WATCH_SECONDS, outbox.pending):
                if outbox.pending():
                    break
                if gone is not None and gone():
                    return  # the finally cancels the call
                if time.monotonic() - quiet >= keepalive:
                    yield sse.KEEPALIVE
                    quiet = time.monotonic()
    finally:
        if not rest.done:
            rest.cancel()  # the client went away: the call is cancelled
        _record(scope)
    try:
        outcome = rest.result()
    except DatabaseError:
        # Committed to 200 already: the error goes in the stream.
        logger.exception("Database unavailable while streaming a call")
        error = jsonrpc.error_body(
            jsonrpc.SERVER_ERROR, jsonrpc.UNAVAILABLE, request_id
        )
        yield sse.event(error)
        return
    if outcome.encoded is not None:
        yield sse.encoded_event(outcome.encoded)
    elif outcome.body is not None:
        yield sse.event(outcome.body)


def _record(scope: CallScope) -> None:
    if scope.record is None:
        return
    try:
        audit.record_call(scope.record, scope.tenant, scope.principal)
    except DatabaseError:
        logger.exception("Could not write the audit row of a streamed call")
