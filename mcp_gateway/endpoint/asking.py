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
import logging
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

from django.core.handlers.wsgi import WSGIRequest
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse

from engines_app.context import Principal
from mcp_gateway import jsonrpc
from mcp_gateway.audit import log as audit
from mcp_gateway.conf import gateway_settings
from mcp_gateway.dispatch import asking
from mcp_gateway.dispatch.core import Pending, handle_asking
from mcp_gateway.dispatch.era import version_header
from mcp_gateway.dispatch.scope import CallScope, Elicit, Outcome
from mcp_gateway.endpoint import sse
from mcp_gateway.models import Tenant
from mcp_gateway.runtime import deadlines
from mcp_gateway.runtime.loop import Resumable

logger = logging.getLogger("mcp_gateway")

_WATCH_SECONDS = 0.25
"""How often a waiting stream looks whether its client has gone."""


def can_ask(request: HttpRequest, message: jsonrpc.Message) -> bool:
    """Whether this call's answer could carry a question: a ``tools/call``
    on a 2025 asking revision whose client accepts an SSE stream, served by
    a WSGI server (the sync view under ASGI, ``ASYNC_ENDPOINT = False``,
    would hold the stream back until it ends), outside a transaction (one
    around the view, ``ATOMIC_REQUESTS``, ends before the stream runs on)."""
    return (
        message.payload["method"] == "tools/call"
        and isinstance(request, WSGIRequest)
        and version_header(request.headers) in asking.ASKING_VERSIONS
        and sse.accepts_event_stream(request.headers.get("Accept", ""))
        and not deadlines.in_transaction()
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


def answer(
    scope: CallScope, message: jsonrpc.Message, outbox: Outbox
) -> Outcome | HttpResponseBase:
    """The call's outcome when nothing was asked (plain JSON; the caller
    writes its audit row), else its stream (which writes the row).
    ``scope.elicit`` asks into ``outbox`` (:func:`asker`).

    Raises:
        DatabaseError: the database failed before anything was asked.
        deadlines.CallerGone: the client went away while the engine ran.
    """
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
    return StreamingHttpResponse(
        _Stream(rest, outbox, scope, message.id), headers=sse.HEADERS
    )


def asker(tenant: Tenant, principal: Principal, outbox: Outbox) -> Elicit:
    """Who asks this call's client (``CallScope.elicit``): its questions go
    to ``outbox``."""
    return asking.Asker(tenant.pk, principal, outbox.put).ask


class _Stream:
    """The stream of a call that asks: the questions, keep-alives while it
    waits, the result. Closed, whether it was read or not, it ends the call
    (cancelled, if it still runs) and writes the audit row, once."""

    def __init__(
        self,
        rest: Resumable[Outcome],
        outbox: Outbox,
        scope: CallScope,
        request_id: object,
    ) -> None:
        self._rest = rest
        self._outbox = outbox
        self._scope = scope
        self._request_id = request_id
        self._ended = False
        self._events = self._run()

    def __iter__(self) -> Iterator[bytes]:
        return self._events

    def close(self) -> None:
        self._events.close()
        self._end()

    def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        if not self._rest.done:
            self._rest.cancel()  # the client went away: the call is cancelled
        _record(self._scope)

    def _run(self) -> Generator[bytes]:
        rest, outbox = self._rest, self._outbox
        gone = self._scope.client_gone
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
                        return  # _end cancels the call
                    if time.monotonic() - quiet >= keepalive:
                        yield sse.KEEPALIVE
                        quiet = time.monotonic()
        finally:
            self._end()
        yield self._result()

    def _result(self) -> bytes:
        """The call's answer as an event; committed to 200 already, a
        failure is an error in the stream, without its details."""
        try:
            outcome = self._rest.result()
            if outcome.encoded is not None:
                return sse.encoded_event(outcome.encoded)
            return sse.event(outcome.body or {})
        except DatabaseError:
            logger.exception("Database unavailable while streaming a call")
            code, text = jsonrpc.SERVER_ERROR, jsonrpc.UNAVAILABLE
        except Exception:
            logger.exception("A streamed call failed")
            code, text = jsonrpc.INTERNAL_ERROR, "Internal error."
        return sse.event(jsonrpc.error_body(code, text, self._request_id))


def _record(scope: CallScope) -> None:
    if scope.record is None:
        return
    try:
        audit.record_call(scope.record, scope.tenant, scope.principal)
    except DatabaseError:
        logger.exception("Could not write the audit row of a streamed call")
