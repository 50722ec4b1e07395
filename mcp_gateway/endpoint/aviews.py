"""The MCP endpoint under ASGI: the same checks, then JSON or an SSE stream.

A whole ``async def`` view. The boundary checks and authentication are the
sync view's own (``admission.admit``), run in the request's thread-sensitive
thread as one ``sync_to_async`` call, as are the catalog read and sync
engines; nothing here touches the ORM on the event loop (below: what is
answered there).

That first hop also answers what needs no waiting (``answer_here``: a sync
engine declared ``blocking = False``, a kept ``tools/list`` answer) and
writes its audit row, so a warm request makes one hop: under the fast path
the response is finished there too (``threads.finished_here``). An engine
that waits or is async, the SDK's answers, a question and a stream of
notifications are the loop's, as below.

When everything that first hop needs is in memory already and the audit
row can be written from the loop (``endpoint.onloop``, ``audit.onloop``:
PostgreSQL through psycopg 3), the hop's work runs on the loop itself,
Django's guard against sync database work on the loop left on: should it
still need the database, the request goes to its thread from the start.

A ``tools/call`` whose client accepts ``text/event-stream`` runs as a task
whose engine reports progress and log lines into a :class:`Channel`. If the
call finishes before anything was reported, the answer is plain JSON with
its usual status; once a notification arrives, or the call has been quiet
for ``SSE_KEEPALIVE_SECONDS``, the answer commits to an SSE stream: the
notifications, keep-alive comments during quiet periods, the result, end.
On the 2025 wires an engine's input request is asked on that stream
(``elicitation/create``, ``dispatch.asking``), which commits it too.
When the client goes away, Django cancels the view or the stream, and the
call is cancelled with it (a sync engine sees ``context.signal`` cancelled);
nothing more is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from asgiref.sync import sync_to_async
from django.core.exceptions import SynchronousOnlyOperation
from django.db import DatabaseError
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    StreamingHttpResponse,
)
from django.views.decorators.csrf import csrf_exempt

from mcp_gateway import jsonrpc
from mcp_gateway.audit import callrecord
from mcp_gateway.audit import log as audit
from mcp_gateway.conf import gateway_settings
from mcp_gateway.dispatch import calls
from mcp_gateway.dispatch.asking import Asker
from mcp_gateway.dispatch.core import Later, ahandle, answer_here, arest, prepare
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.endpoint import boundary, listen, onloop, sse, threads
from mcp_gateway.endpoint.admission import admit, call_scope
from mcp_gateway.endpoint.streaming import Channel
from mcp_gateway.endpoint.threads import finished_here, send_request_started
from mcp_gateway.endpoint.views import response_of

logger = logging.getLogger("mcp_gateway")


@csrf_exempt  # bearer tokens only: no cookie ever authenticates this view
async def aendpoint(request: HttpRequest, slug: str) -> HttpResponseBase:
    if listen.wants_stream(request):
        return await listen.standalone(request, slug)
    loop = asyncio.get_running_loop()
    admissible = onloop.admissible(request, slug)
    if admissible is not None:
        answered = await _on_loop(request, slug, loop, admissible)
        if isinstance(answered, HttpResponseBase):
            return answered
        if answered is not None:
            return await _rest(request, answered)
    hop = asyncio.ensure_future(sync_to_async(_first_hop)(request, slug, loop))
    try:
        admitted = await asyncio.shield(hop)
    except asyncio.CancelledError:
        await _finishing(asyncio.ensure_future(_abandoned(hop)))
        raise
    if isinstance(admitted, HttpResponseBase):
        return admitted
    return await _rest(request, admitted)


async def _on_loop(
    request: HttpRequest,
    slug: str,
    loop: asyncio.AbstractEventLoop,
    admissible: onloop.OnLoop,
) -> HttpResponseBase | _Admitted | None:
    """The first hop's work on the loop (``endpoint.onloop``), its audit
    rows written from there before the answer is finished; ``None`` if
    something had to be read from the database first (nothing was written:
    the request goes to its thread from the start). A refusal or an error
    is finished in the request's thread (its logging may send mail)."""
    failed: Exception | None = None
    with audit.deferred() as rows:
        try:
            answered = _first_hop(request, slug, loop, _as_it_is)
        except SynchronousOnlyOperation:
            threads.send_request_started_again()
            return None
        except Exception as exc:  # raised below, once its rows are written
            failed = exc
    if failed is not None:
        if rows:
            try:
                await audit.awrite(rows, admissible.alias)
            except DatabaseError:
                logger.exception("Audit rows of tenant %r not written", slug)
        raise failed
    if rows:
        try:
            await audit.awrite(rows, admissible.alias)
        except DatabaseError as exc:
            logger.exception("Database unavailable while serving tenant %r", slug)
            if isinstance(answered, _Admitted):  # committed to a stream
                answered = dataclasses.replace(answered, outcome=None, failure=exc)
            else:
                answered = _unavailable(slug, admissible.message.id)
    if not isinstance(answered, HttpResponseBase):
        return answered
    if answered.status_code >= 400:
        return await sync_to_async(finished_here)(answered)
    return finished_here(answered)


def _as_it_is(response: HttpResponseBase) -> HttpResponseBase:
    return response


async def _finishing(recording: asyncio.Future[None]) -> None:
    """Wait for ``recording`` through any further cancel (a server's own,
    at shutdown): what was admitted is recorded whatever comes after."""
    while not recording.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(recording)
    if not recording.cancelled() and recording.exception() is not None:
        logger.error(
            "Could not record a call whose client left.",
            exc_info=recording.exception(),
        )


async def _abandoned(hop: asyncio.Future[HttpResponseBase | _Admitted]) -> None:
    """The client left while the first hop ran: once it is done, a call it
    admitted and left to the loop is recorded cancelled (its quota unit
    given back), as a call cancelled on the loop is."""
    await asyncio.wait({hop})
    if hop.cancelled() or hop.exception() is not None:
        return
    admitted = hop.result()
    if not isinstance(admitted, _Admitted) or admitted.later is None:
        return  # answered and recorded in the hop, or nothing to record
    scope = admitted.scope
    if scope.record is not None:
        calls.finish(scope, callrecord.CANCELLED)
        await audit.arecord_call(scope.record, scope.tenant, scope.principal)


@dataclasses.dataclass(frozen=True)
class _Admitted:
    """A request its first hop admitted, for the loop to answer."""

    scope: CallScope
    message: jsonrpc.Message
    later: Later | None = None
    """What the loop runs on; None for ``subscriptions/listen`` and for a
    call the hop answered (``outcome`` or ``failure``)."""
    channel: Channel | None = None
    """The call's notifications (a ``tools/call`` whose client takes SSE)."""
    outcome: Outcome | None = None
    """The answer, when the hop made it but it has notifications to stream."""
    failure: DatabaseError | None = None
    """The database's failure after the call's notifications were queued:
    the stream sends them, then the error."""

    @property
    def answered(self) -> bool:
        return self.outcome is not None or self.failure is not None


def _first_hop(
    request: HttpRequest,
    slug: str,
    loop: asyncio.AbstractEventLoop,
    finish: Callable[[HttpResponseBase], HttpResponseBase] = finished_here,
) -> HttpResponseBase | _Admitted:
    """In the request's thread: admission, and the answer itself when it
    needs no waiting (``dispatch.core.answer_here``), its audit row
    written; the fast path then finishes the response in this hop too
    (``finish``; on the loop, once its rows are written: :func:`_on_loop`)."""
    send_request_started()  # the fast path's, in this first hop
    request.get_host()  # DisallowedHost -> 400 before anything else
    try:
        admitted = _admit_and_scope(request, slug)
    except DatabaseError:
        logger.exception("Database unavailable while serving tenant %r", slug)
        return finish(boundary.unavailable())
    if isinstance(admitted, HttpResponse):
        return finish(admitted)
    scope, message = admitted
    if message.payload["method"] == listen.LISTEN:
        return _Admitted(scope, message)
    channel = None
    if _streamable(request, message):
        channel = Channel(message.payload.get("params"), scope.headers, loop)
        scope = _streaming_scope(scope, channel)
    try:
        answer = _answered_here(message, scope)
    except DatabaseError as exc:
        if channel is not None and channel.used:  # committed to a stream
            return _Admitted(scope, message, channel=channel, failure=exc)
        return finish(_unavailable(slug, message.id))
    if isinstance(answer, Later):
        return _Admitted(scope, message, answer, channel)
    if channel is not None and channel.used:
        return _Admitted(scope, message, channel=channel, outcome=answer)
    return finish(response_of(answer))


def _answered_here(message: jsonrpc.Message, scope: CallScope) -> Outcome | Later:
    """``answer_here``, with the call's audit row once it is answered (also
    when answering failed), as :func:`audited` writes it on the loop."""
    try:
        answer = answer_here(message.payload, scope)
    except BaseException:
        if scope.record is not None:
            audit.record_call(scope.record, scope.tenant, scope.principal)
        raise
    if isinstance(answer, Outcome) and scope.record is not None:
        audit.record_call(scope.record, scope.tenant, scope.principal)
    return answer


async def _rest(request: HttpRequest, admitted: _Admitted) -> HttpResponseBase:
    """On the loop: what the first hop left (an engine that waits, the SDK's
    answer, a question to ask, a stream of notifications)."""
    scope, message = admitted.scope, admitted.message
    if admitted.later is None and not admitted.answered:
        return await _listen(request, scope, message)
    if admitted.channel is not None:
        return await _answer_streaming(scope, message, admitted)
    assert admitted.later is not None  # noqa: S101 - an outcome has a channel
    try:
        return response_of(await audited(arest(admitted.later, scope), scope))
    except DatabaseError:
        return _unavailable(scope.tenant.slug, message.id)


async def audited(answering: Awaitable[Outcome], scope: CallScope) -> Outcome:
    """Await the answer, then write the call's audit row (also if cancelled)."""
    try:
        return await answering
    finally:
        if scope.record is not None:
            await audit.arecord_call(scope.record, scope.tenant, scope.principal)


async def _listen(
    request: HttpRequest, scope: CallScope, message: jsonrpc.Message
) -> HttpResponseBase:
    """``subscriptions/listen``: a stream on 2026-07-28, the SDK's answer else."""
    step = prepare(message.payload, scope)
    if isinstance(step, Outcome):
        return response_of(step)
    if not step.route.modern:
        return response_of(await ahandle(message.payload, scope))
    return await listen.subscribe(
        request, scope.tenant, scope.principal, message, step.route.version
    )


def _admit_and_scope(
    request: HttpRequest, slug: str
) -> tuple[CallScope, jsonrpc.Message] | HttpResponse:
    admitted = admit(request, slug)
    if isinstance(admitted, HttpResponse):
        return admitted
    tenant, principal, message = admitted
    try:
        scope = call_scope(request, tenant, principal, message)
    except DatabaseError:
        logger.exception("Database unavailable while serving tenant %r", slug)
        return boundary.unavailable(message.id)
    if isinstance(scope, HttpResponse):
        return scope
    return dataclasses.replace(scope, listens=True), message


def _streamable(request: HttpRequest, message: jsonrpc.Message) -> bool:
    return message.payload["method"] == "tools/call" and sse.accepts_event_stream(
        request.headers.get("Accept", "")
    )


def _streaming_scope(scope: CallScope, channel: Channel) -> CallScope:
    """The call's scope with its stream: notifications, and questions."""
    return CallScope(
        scope.tenant,
        scope.catalog,
        scope.principal,
        scope.headers,
        progress_sink=channel.progress,
        log_sink=channel.log,
        record=scope.record,
        elicit=Asker(scope.tenant.pk, scope.principal, channel.request).ask,
    )


async def _answer_streaming(
    scope: CallScope, message: jsonrpc.Message, admitted: _Admitted
) -> HttpResponseBase:
    channel = admitted.channel
    assert channel is not None  # noqa: S101 - the caller's test
    call: asyncio.Future[Outcome]
    if admitted.later is None:  # answered in the first hop, with notifications
        call = asyncio.get_running_loop().create_future()
        if admitted.failure is not None:
            call.set_exception(admitted.failure)
        else:
            assert admitted.outcome is not None  # noqa: S101 - answered
            call.set_result(admitted.outcome)
    else:
        call = asyncio.ensure_future(audited(arest(admitted.later, scope), scope))
    call.add_done_callback(channel.wake)
    try:
        await channel.wait(_keepalive_seconds())
    except asyncio.CancelledError:
        await _cancel(call, channel)
        raise
    if call.done() and not channel.pending:
        try:
            return response_of(call.result())
        except DatabaseError:
            return _unavailable(scope.tenant.slug, message.id)
    events = _events(call, channel, message.id)
    return StreamingHttpResponse(events, headers=sse.HEADERS)


def _unavailable(slug: str, request_id: object) -> HttpResponse:
    """The 503 of a database failure while serving ``slug``, logged."""
    logger.exception("Database unavailable while serving tenant %r", slug)
    return boundary.unavailable(request_id)


async def _events(
    call: asyncio.Future[Outcome], channel: Channel, request_id: object
) -> AsyncIterator[bytes]:
    try:
        while not call.done():
            for notification in channel.drain():
                yield sse.event(notification)
            if not await channel.wait(_keepalive_seconds()):
                yield sse.KEEPALIVE
        for notification in channel.drain():
            yield sse.event(notification)
        try:
            outcome = call.result()
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
    finally:
        await _cancel(call, channel)


async def _cancel(call: asyncio.Future[Outcome], channel: Channel) -> None:
    """Stop the call if it still runs; send nothing more for it."""
    channel.close()
    if not call.done():
        call.cancel()
        await asyncio.wait({call})


def _keepalive_seconds() -> float:
    return gateway_settings().SSE_KEEPALIVE_SECONDS
