"""An ASGI wrapper that keeps the MCP boundary in force under ASGI servers.

Django's ASGI handler reads the whole body before any view runs, and ASGI
servers hand an absolute-form target over as a path. For requests to an MCP
mount (a path ending in ``/mcp``) this wrapper refuses an absolute-form
target with 400 (when the server still shows it: httptools does not) and
never lets more than ``MAX_REQUEST_BYTES`` + 1 body bytes reach Django, so
the view answers 413 in its usual order of checks. Any HTTP/1.1 request
without a Host header is a 400 (``framing``). A request the site's URLconf
resolves to the endpoint's async view skips Django's middleware chain
(``fastpath``) when the guard wraps Django's own ASGI handler.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from django.core.handlers.asgi import ASGIHandler

from mcp_gateway import jsonrpc
from mcp_gateway.conf import gateway_settings
from mcp_gateway.endpoint.framing import (
    MISSING_HOST,
    is_mount,
    lacks_host,
    refusal_body,
)
from mcp_gateway.endpoint.threads import RequestThreads
from mcp_gateway.engine_secrets import store

if TYPE_CHECKING:
    from mcp_gateway.endpoint.fastpath import FastPath

__all__ = ["BoundaryGuard", "is_mount"]

Scope = dict[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BoundaryGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.threads = RequestThreads()
        self.fast: FastPath | None = None
        if isinstance(app, ASGIHandler):  # the mount skips its middleware chain
            from mcp_gateway.endpoint.fastpath import FastPath  # needs the apps

            self.fast = FastPath(app)
        store.startup_check()  # wrong secret keys: refuse to start
        from mcp_gateway.catalog import log_held_at_start  # needs the apps

        log_held_at_start()  # not in the first request

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Django's handler would start (and join) a thread per request.
        async with self.threads.request():
            await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _lacks_host(scope):
            body = refusal_body(scope["path"], MISSING_HOST)
            await _send_json(send, 400, body)
        elif not is_mount(scope["path"]):
            await self.app(scope, receive, send)
        elif not scope.get("raw_path", b"/").startswith(b"/"):
            await _refuse(
                send, 400, "The request target must be the bare endpoint path."
            )
        elif self.fast is not None and (found := self.fast.match(scope)):
            await self.fast.serve(scope, _bounded(receive, scope), send, *found)
        else:
            await self.app(scope, _bounded(receive, scope), send)


def _lacks_host(scope: Scope) -> bool:
    has_host = any(name.lower() == b"host" for name, _ in scope.get("headers", []))
    return lacks_host(str(scope.get("http_version", "1.1")), has_host)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length" and value.isdigit():
            return int(value)
    return None


def _bounded(receive: Receive, scope: Scope) -> Receive:
    """Pass at most limit + 1 body bytes on; then the body ends."""
    limit = gateway_settings().MAX_REQUEST_BYTES
    declared = _declared_length(scope)
    state = {"read": 0, "done": declared is not None and declared > limit}
    first = True

    async def bounded() -> Message:
        nonlocal first
        if state["done"]:
            if first:  # over the declared limit: read nothing at all
                first = False
                return {"type": "http.request", "body": b"", "more_body": False}
            return await _after_body(receive)
        first = False
        message = await receive()
        if message["type"] != "http.request":
            return message
        body = message.get("body", b"")[: limit + 1 - int(state["read"])]
        state["read"] = int(state["read"]) + len(body)
        if state["read"] > limit or not message.get("more_body", False):
            state["done"] = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {**message, "body": body}

    return bounded


async def _after_body(receive: Receive) -> Message:
    """The next message that is not body: the client's disconnect.

    Body beyond the limit is dropped; the disconnect must reach Django, which
    cancels the view (or its response stream) when the client goes away.
    """
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return message


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps(jsonrpc.error_body(jsonrpc.INVALID_REQUEST, message)).encode()
    await _send_json(send, status, body)


async def _send_json(send: Send, status: int, body: bytes) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
