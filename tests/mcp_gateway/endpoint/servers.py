"""The mount POSTed to in-process through each server's real guard (ASGI:
``mcp_gateway.asgi``, WSGI: ``mcp_gateway.wsgi``) around Django's own
handler, and which handler served it: the server's fast path or the chain."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import pytest
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from mcp_gateway import asgi, wsgi
from mcp_gateway.endpoint import aviews, fastpath, views, wsgifast
from mcp_gateway.endpoint.threads import RequestThreads

BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
seen_by_middleware: list[str] = []

Response = tuple[int, list[tuple[str, str]], bytes]


class Recording:
    """A site's own middleware: it must see the mount's requests."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        seen_by_middleware.append(request.path)
        return self.get_response(request)  # type: ignore[no-any-return]


# A host site that mounts the gateway under a prefix of its own.
urlpatterns = [path("site/gateway/", include("mcp_gateway.urls"))]


# -- ASGI -------------------------------------------------------------------


def asgi_scope(
    token: str | None,
    *,
    path: str = "/t/acme/mcp",
    host: str = "testserver",
    root_path: str = "",
    body: bytes = BODY,
) -> dict[str, Any]:
    """A POST's scope (a ``tools/list`` unless ``body`` says otherwise)."""
    headers = [
        (b"host", host.encode()),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2025-11-25"),
        (b"content-length", str(len(body)).encode()),
    ]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": root_path,
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


def asgi_post(token: str | None, **where: Any) -> Response:
    """POST a ``tools/list`` through a fresh guard around Django's handler."""
    guard = asgi.BoundaryGuard(ASGIHandler())
    return asyncio.run(asgi_request(guard, asgi_scope(token, **where)))


async def asgi_request(
    guard: asgi.BoundaryGuard, scope: dict[str, Any], body: bytes = BODY
) -> Response:
    """The guard's answer to ``scope``'s POST of ``body``, in the calling task."""
    start: dict[str, Any] = {}
    chunks: list[bytes] = []
    never = asyncio.get_running_loop().create_future()
    sent = False

    async def receive() -> Mapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await never
        return {"type": "http.disconnect"}  # pragma: no cover

    async def send(message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        else:
            chunks.append(message.get("body", b""))

    await guard(scope, receive, send)
    never.cancel()
    headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in start["headers"]]
    return start["status"], headers, b"".join(chunks)


async def until_idle(threads: RequestThreads, count: int) -> None:
    """Wait (10 s at most) until ``count`` threads are back from requests."""
    for _ in range(10_000):
        if threads.idle >= count:
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"{threads.idle} idle threads, not {count}")


def asgi_taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the ASGI fast path will serve."""
    served: list[str] = []
    original = fastpath.FastPath.serve

    async def serve(self: Any, scope: Any, *args: Any) -> None:
        served.append(scope["path"])
        await original(self, scope, *args)

    monkeypatch.setattr(fastpath.FastPath, "serve", serve)
    return served


# -- WSGI -------------------------------------------------------------------


def wsgi_post(
    token: str | None,
    *,
    path: str = "/t/acme/mcp",
    host: str = "testserver",
    script_name: str = "",
) -> Response:
    """POST a ``tools/list`` through a fresh guard around Django's handler."""
    guard = wsgi.BoundaryGuard(WSGIHandler())
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": script_name,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": host,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(BODY)),
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25",
        "wsgi.input": io.BytesIO(BODY),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    if token is not None:
        environ["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        started.extend([int(status.split()[0]), headers])

    chunks = guard(environ, start_response)
    try:
        body = b"".join(chunks)
    finally:
        chunks.close()  # type: ignore[attr-defined]
    return started[0], started[1], body


def wsgi_taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the mount's own WSGI handler will serve."""
    served: list[str] = []
    original = wsgifast.MountHandler.__call__

    def call(self: Any, environ: Any, start_response: Any) -> Any:
        served.append(environ["PATH_INFO"])
        return original(self, environ, start_response)

    monkeypatch.setattr(wsgifast.MountHandler, "__call__", call)
    return served


# -- Both -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Server:
    """One server's guard, and what a test needs to know of its fast path."""

    post: Callable[..., Response]
    taken: Callable[[pytest.MonkeyPatch], list[str]]
    fast_path: str
    """The ``MCP_GATEWAY`` key that turns the fast path off."""
    admission: tuple[ModuleType, str]
    """The view's first step, where a test makes the view fail."""


SERVERS = {
    "asgi": Server(
        asgi_post, asgi_taken, "ASGI_FAST_PATH", (aviews, "_admit_and_scope")
    ),
    "wsgi": Server(wsgi_post, wsgi_taken, "WSGI_FAST_PATH", (views, "admit")),
}
