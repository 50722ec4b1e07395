"""The MCP endpoint under ASGI: the same checks, then JSON or an SSE stream.

A whole ``async def`` view. The boundary checks and authentication are the
sync view's own (``admission.admit``), run in the request's thread-sensitive
thread as one ``sync_to_async`` call, as are the catalog read and sync
engines; nothing here touches the ORM on the event loop.

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
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable

from asgiref.sync import sync_to_async
from django.db import DatabaseError
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    StreamingHttpResponse,
)
from django.views.decorators.csrf import csrf_exempt

from mcp_gateway import jsonrpc
from mcp_gateway.audit import log as audit
from mcp_gateway.conf import gateway_settings
from mcp_gateway.dispatch.asking import Asker
from mcp_gateway.dispatch.core import ahandle, prepare
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.endpoint import boundary, listen, sse
from mcp_gateway.endpoint.admission import admit, call_scope
from mcp_gateway.endpoint.streaming import Channel
from mcp_gateway.endpoint.threads import send_request_started
from mcp_gateway.endpoint.views import response_of

logger = logging.getLogger("mcp_gateway")

Admitted = tuple[CallScope, jsonrpc.Message]


@csrf_exempt  # bearer tokens only: no cookie ever authenticates this view
async def aendpoint(request: HttpRequest, slug: str) -> HttpResponseBase:
    if listen.wants_stream(request):
        return await listen.standalone(request, slug)
    try:
        admitted = await sync_to_async(_admit_and_scope)(request, slug)
    except DatabaseError:
        logger.exception("Database unavailable while serving tenant %r", slug)
        return boundary.unavailable()
    if isinstance(admitted, HttpResponse):
        return admitted
    scope, message = admitted
    if message.payload["method"] == listen.LISTEN:
        return await _listen(request, scope, message)
    if _streamable(request, message):
        return await _answer_streaming(scope, message)
    try:
        return response_of(await audited(ahandle(message.payload, scope), scope))
    except DatabaseError:
        logger.exception("Database unavailable while serving tenant %r", slug)
        return boundary.unavailable(message.id)


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


def _admit_and_scope(request: HttpRequest, slug: str) -> Admitted | HttpResponse:
    send_request_started()  # the fast path's, in this first hop
    request.get_host()  # DisallowedHost -> 400 before anything else
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


async def _answer_streaming(
    scope: CallScope, message: jsonrpc.Message
) -> HttpResponseBase:
    channel = Channel(message.payload.get("params"), scope.headers)
    scope = CallScope(
        scope.tenant,
        scope.catalog,
        scope.principal,
        scope.headers,
        progress_sink=channel.progress,
        log_sink=channel.log,
        record=scope.record,
        elicit=Asker(scope.tenant.pk, scope.principal, channel.request).ask,
    )
    call = asyncio.ensure_future(audited(ahandle(message.payload, scope), scope))
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
    """The JSON path's answer to a database failure, for the SSE path."""
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
