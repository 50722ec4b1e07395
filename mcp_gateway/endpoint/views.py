"""The sync MCP endpoint (WSGI): admission, dispatch, the JSON answer (or
the SSE stream of a 2025 call that asks its client, ``endpoint.asking``)."""

from __future__ import annotations

import logging

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from engines_app.context import Principal
from mcp_gateway import jsonrpc
from mcp_gateway.audit import log as audit
from mcp_gateway.dispatch.core import handle
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.endpoint import asking, boundary
from mcp_gateway.endpoint.admission import admit, call_scope
from mcp_gateway.models import Tenant
from mcp_gateway.runtime import deadlines

logger = logging.getLogger("mcp_gateway")


@csrf_exempt  # bearer tokens only: no cookie ever authenticates this view
def endpoint(request: HttpRequest, slug: str) -> HttpResponseBase:
    request.get_host()  # DisallowedHost -> 400 before anything else
    try:
        admitted = admit(request, slug)
        if isinstance(admitted, HttpResponse):
            return admitted
        return _dispatch(request, *admitted)
    except DatabaseError:
        logger.exception("Database unavailable while serving tenant %r", slug)
        return boundary.unavailable()


def _dispatch(
    request: HttpRequest, tenant: Tenant, principal: Principal, message: jsonrpc.Message
) -> HttpResponseBase:
    outbox = asking.Outbox() if asking.can_ask(request, message) else None
    elicit = None if outbox is None else asking.asker(tenant, principal, outbox)
    try:
        scope = call_scope(request, tenant, principal, message, elicit)
        if isinstance(scope, HttpResponse):
            return scope
        answered = _handled(message, scope, outbox)
        if isinstance(answered, HttpResponseBase):
            return answered  # a stream: it writes the audit row
        outcome = answered
        if scope.record is not None:
            audit.record_call(scope.record, tenant, principal)
    except DatabaseError:
        logger.exception("Database unavailable while serving tenant %r", tenant.slug)
        return boundary.unavailable(message.id)
    return response_of(outcome)


def _handled(
    message: jsonrpc.Message, scope: CallScope, outbox: asking.Outbox | None
) -> Outcome | HttpResponseBase:
    """The answer, or the stream of a call that asks (``outbox``); for a
    client gone away mid-call, none worth writing."""
    try:
        if outbox is not None:
            return asking.answer(scope, message, outbox)
        return handle(message.payload, scope)
    except deadlines.CallerGone:
        return CLIENT_GONE


CLIENT_GONE = Outcome(499, None, {})
"""What the log says of a call whose client closed its connection
(nginx's "client closed request"); no one reads it."""


def response_of(outcome: Outcome) -> HttpResponse:
    """The JSON answer of an outcome (an empty body for a 202)."""
    response: HttpResponse
    if outcome.encoded is not None:
        response = HttpResponse(
            outcome.encoded, status=outcome.status, content_type="application/json"
        )
    elif outcome.body is None:
        response = HttpResponse(status=outcome.status)
    else:
        response = JsonResponse(
            outcome.body,
            status=outcome.status,
            json_dumps_params={"ensure_ascii": False},
        )
    for name, value in outcome.headers.items():
        response[name] = value
    return response
