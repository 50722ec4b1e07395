"""Change streams under ASGI: ``tools/list_changed`` pushed to listening clients.

Two ways in, one stream loop:

- 2026-07-28: ``subscriptions/listen`` (a POST); the stream opens with
  ``notifications/subscriptions/acknowledged``, tags every notification with
  the subscription id (the request's id), sends only the kinds the client
  asked for, and ends gracefully with the listen result.
- 2025 eras: GET on the mount with ``Accept: text/event-stream`` and a bearer
  token: the standalone SSE stream. No session: the stream belongs to the
  connection and the tenant.

The loop (:func:`_frames`) waits on its :class:`fanout.Listener`, sends at
most one ``list_changed`` per ``fanout.COALESCE_SECONDS``, a keep-alive
comment every ``SSE_KEEPALIVE_SECONDS`` of quiet, and re-checks the bearer
credential at each keep-alive and whenever a principal change may concern it:
a revoked or expired token, a deactivated user, a user who left the tenant or
a disabled tenant ends the stream. Notifications carry no catalog content:
clients re-list. The JSON (WSGI) endpoint has none of this.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import DatabaseError, close_old_connections
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    StreamingHttpResponse,
)
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import methods
from pydantic import ValidationError

from engines_app.context import Principal
from mcp_gateway import jsonrpc
from mcp_gateway.conf import AUTH_DISABLED, gateway_settings
from mcp_gateway.endpoint import bearer, boundary, fanout, sse
from mcp_gateway.endpoint.admission import admit_stream
from mcp_gateway.models import Tenant
from mcp_gateway.observability import observe

logger = logging.getLogger("mcp_gateway")
_T = TypeVar("_T")

LISTEN = "subscriptions/listen"
TOOLS_CHANGED = "notifications/tools/list_changed"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


def wants_stream(request: HttpRequest) -> bool:
    """A GET asking for the standalone event stream (2025 eras)."""
    return request.method == "GET" and sse.accepts_event_stream(
        request.headers.get("Accept", "")
    )


@dataclass(frozen=True)
class Wire:
    """How one stream frames its messages: standalone (2025) or listen (2026)."""

    subscription: Any = None
    """The listen request's id; None for the standalone stream."""
    version: str = ""
    tools: bool = True
    """Whether the client asked for ``tools/list_changed``."""

    def opening(self, honored: Mapping[str, Any] | None) -> bytes:
        if self.subscription is None:
            return sse.KEEPALIVE  # the response starts at once
        params = {"notifications": honored or {}, "_meta": self._meta()}
        return sse.event(_notification(ACKNOWLEDGED, params))

    def changed(self) -> bytes | None:
        if not self.tools:
            return None
        if self.subscription is None:
            return sse.event(_notification(TOOLS_CHANGED, None))
        return sse.event(_notification(TOOLS_CHANGED, {"_meta": self._meta()}))

    def closing(self) -> bytes | None:
        """The graceful end: the listen result (the standalone stream just ends)."""
        if self.subscription is None:
            return None
        result = methods.serialize_server_result(
            LISTEN, self.version, {"resultType": "complete", "_meta": self._meta()}
        )
        body = {"jsonrpc": "2.0", "id": self.subscription, "result": result}
        return sse.event(body)

    def _meta(self) -> dict[str, Any]:
        return {SUBSCRIPTION_ID_META_KEY: self.subscription}


def _notification(method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


# -- The two ways in ----------------------------------------------------------------


async def standalone(request: HttpRequest, slug: str) -> HttpResponseBase:
    """GET on the mount: the 2025 eras' standalone SSE stream."""
    try:
        admitted = await _in_shared_thread(_admit, request, slug)
    except DatabaseError:
        logger.exception("Database unavailable while serving tenant %r", slug)
        return boundary.unavailable()
    if isinstance(admitted, HttpResponse):
        return admitted
    tenant, principal = admitted
    return await _open(request, tenant, principal, Wire(), None)


async def _in_shared_thread(function: Callable[..., _T], *args: Any) -> _T:
    """``function`` on the loop's shared threads, handing the thread's database
    connection back when it returns: a thread that kept one would hold it
    from psycopg's pool (ASGI's default on PostgreSQL), and once the loop's
    threads outnumber the pool's connections every other check would wait
    for the pool's timeout."""

    def run() -> _T:
        try:
            return function(*args)
        finally:
            close_old_connections()

    return await sync_to_async(run, thread_sensitive=False)()


def _admit(request: HttpRequest, slug: str) -> tuple[Tenant, Principal] | HttpResponse:
    request.get_host()  # DisallowedHost -> 400 before anything else
    return admit_stream(request, slug)


async def subscribe(
    request: HttpRequest,
    tenant: Tenant,
    principal: Principal,
    message: jsonrpc.Message,
    version: str,
) -> HttpResponseBase:
    """``subscriptions/listen`` on 2026-07-28: the acknowledged stream."""
    params = message.payload.get("params") or {}
    try:
        parsed = types.SubscriptionsListenRequestParams.model_validate(params)
    except ValidationError:
        return boundary.error(
            400, jsonrpc.INVALID_PARAMS, "Invalid subscription filter.", message.id
        )
    honored = _honored(parsed.notifications)
    wire = Wire(message.id, version, tools=bool(honored.get("toolsListChanged")))
    return await _open(request, tenant, principal, wire, honored)


def _honored(requested: types.SubscriptionFilter) -> dict[str, Any]:
    """What the acknowledgement echoes: every kind asked for (as the SDK does);
    only ``toolsListChanged`` ever fires here."""
    honored: dict[str, Any] = {}
    for key in ("toolsListChanged", "promptsListChanged", "resourcesListChanged"):
        if requested.model_dump(by_alias=True).get(key) is True:
            honored[key] = True
    if requested.resource_subscriptions:
        honored["resourceSubscriptions"] = list(requested.resource_subscriptions)
    return honored


# -- The stream ---------------------------------------------------------------------


async def _open(
    request: HttpRequest,
    tenant: Tenant,
    principal: Principal,
    wire: Wire,
    honored: Mapping[str, Any] | None,
) -> HttpResponseBase:
    # The request's own thread (a POST's admission ran there) would keep its
    # connection until the response ends, a stream's whole life: hand it back
    # first, or streams opening at once hold the pool and wait on each other.
    await sync_to_async(close_old_connections)()
    valid, user = await _averify(request, tenant)
    if not valid:
        return boundary.plain(401, "The credential is no longer valid.")
    listener = fanout.Listener(tenant.pk, user, principal.token)
    try:
        fanout.hub().open(listener, tenant.slug)
    except fanout.Full as full:
        return boundary.error(429, jsonrpc.SERVER_ERROR, str(full), _id_of(wire))
    check = _Check(request, tenant)
    frames = _frames(listener, wire, honored, check, tenant.slug)
    response = StreamingHttpResponse(frames, headers=sse.HEADERS)
    setattr(response, observe.COUNTS_ITSELF, True)  # the hub counts it
    return response


def _id_of(wire: Wire) -> Any:
    return jsonrpc.NO_ID if wire.subscription is None else wire.subscription


class _Check:
    """Re-verifies the stream's bearer credential (in a thread)."""

    def __init__(self, request: HttpRequest, tenant: Tenant) -> None:
        self.request = request
        self.tenant = tenant

    async def valid(self) -> bool:
        try:
            valid, _ = await _averify(self.request, self.tenant)
        except DatabaseError:
            logger.exception("Database unavailable while re-checking a stream")
            return True  # a database outage is no revocation: check again later
        return valid


async def _averify(request: HttpRequest, tenant: Tenant) -> tuple[bool, Any]:
    """``_verify`` on the loop's shared threads: a stream keeps no thread."""
    return await _in_shared_thread(_verify, request, tenant)


def _verify(request: HttpRequest, tenant: Tenant) -> tuple[bool, Any]:
    """Whether the credential is still valid, and its user's id (or None).

    Asks the site's backends again, quietly (a revoked token must not count
    towards a lockout). Closes stale connections first: a stream lives long.
    """
    close_old_connections()
    if gateway_settings().AUTH_MODE == AUTH_DISABLED:
        active = Tenant.objects.filter(pk=tenant.pk, is_active=True).exists()
        return active, None
    token = boundary.bearer_token(request)
    if token is None:
        return False, None
    user = bearer.authenticate_quietly(request, bearer_token=token, tenant=tenant.slug)
    return (False, None) if user is None else (True, user.pk)


async def _frames(
    listener: fanout.Listener,
    wire: Wire,
    honored: Mapping[str, Any] | None,
    check: _Check,
    slug: str,
) -> AsyncIterator[bytes]:
    keepalive = gateway_settings().SSE_KEEPALIVE_SECONDS
    last_sent = -fanout.COALESCE_SECONDS
    next_check = time.monotonic() + keepalive
    try:
        yield wire.opening(honored)
        while True:
            woke = await _wait(listener, max(0.0, next_check - time.monotonic()))
            if listener.closed:
                break
            if not woke or listener.recheck or time.monotonic() >= next_check:
                listener.recheck = False
                next_check = time.monotonic() + keepalive
                if not await check.valid():
                    return  # revoked, expired, deactivated, left, disabled
                if not woke:
                    yield sse.KEEPALIVE
            if listener.changed:
                last_sent = await _coalesce(listener, last_sent)
                if listener.closed:
                    break
                if (frame := wire.changed()) is not None:
                    yield frame
        if (frame := wire.closing()) is not None:
            yield frame
    finally:
        fanout.hub().release(listener, slug)


async def _wait(listener: fanout.Listener, seconds: float) -> bool:
    """Wait for a flag; False when ``seconds`` pass first."""
    try:
        await asyncio.wait_for(listener.wake.wait(), seconds)
    except TimeoutError:
        return False
    finally:
        listener.wake.clear()
    return True


async def _coalesce(listener: fanout.Listener, last_sent: float) -> float:
    """Hold a notification until ``COALESCE_SECONDS`` after the last one, so a
    burst of changes becomes one notification; returns the send time."""
    gap = last_sent + fanout.COALESCE_SECONDS - time.monotonic()
    if gap > 0:
        await asyncio.sleep(gap)
    listener.changed = False
    return time.monotonic()
