"""The ASGI fast path: the MCP mount served without Django's middleware chain,
with what the chain gave its responses kept (headers, host check, redirects,
signals, errors)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core import signals
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from mcp_gateway.asgi import BoundaryGuard
from mcp_gateway.endpoint import aviews, fastpath

pytestmark = pytest.mark.django_db(transaction=True)  # requests use their threads

BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
seen_by_middleware: list[str] = []


class Recording:
    """A site's own middleware: it must see the mount's requests."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        seen_by_middleware.append(request.path)
        return self.get_response(request)  # type: ignore[no-any-return]


# A host site that mounts the gateway under a prefix of its own.
urlpatterns = [path("site/gateway/", include("mcp_gateway.urls"))]


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the fast path served."""
    served: list[str] = []
    original = fastpath.FastPath.serve

    async def serve(self: Any, scope: Any, *args: Any) -> None:
        served.append(scope["path"])
        await original(self, scope, *args)

    monkeypatch.setattr(fastpath.FastPath, "serve", serve)
    return served


def call(
    token: str | None,
    *,
    path: str = "/t/acme/mcp",
    host: bytes = b"testserver",
    root_path: str = "",
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """POST a ``tools/list`` through a fresh guard around Django's handler."""
    guard = BoundaryGuard(ASGIHandler())
    headers = [
        (b"host", host),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2025-11-25"),
        (b"content-length", str(len(BODY)).encode()),
    ]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {
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
    start: dict[str, Any] = {}
    body: list[bytes] = []

    async def run() -> None:
        never = asyncio.get_running_loop().create_future()
        sent = False

        async def receive() -> Mapping[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": BODY, "more_body": False}
            await never
            return {"type": "http.disconnect"}  # pragma: no cover

        async def send(message: Mapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                body.append(message.get("body", b""))

        await guard(scope, receive, send)
        never.cancel()

    asyncio.run(run())
    return start["status"], list(start["headers"]), b"".join(body)


def test_the_mount_skips_the_chain_and_keeps_the_headers_it_set(
    token: str, settings: Any, taken: list[str]
) -> None:
    fast = call(token)
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ASGI_FAST_PATH": False}
    chain = call(token)

    assert taken == ["/t/acme/mcp"]
    assert fast[0] == chain[0] == 200
    assert sorted(fast[1]) == sorted(chain[1])
    names = {name.lower() for name, _ in fast[1]}
    assert {
        b"x-content-type-options",
        b"referrer-policy",
        b"cross-origin-opener-policy",
        b"x-frame-options",
        b"content-length",
    } <= names
    assert json.loads(fast[2]) == json.loads(chain[2])


def test_a_host_outside_allowed_hosts_is_refused(token: str, taken: list[str]):
    status, _, body = call(token, host=b"evil.example")

    assert taken == ["/t/acme/mcp"]
    assert status == 400
    assert b"evil.example" not in body


def test_the_ssl_redirect_still_applies(token: str, settings: Any, taken: list[str]):
    settings.SECURE_SSL_REDIRECT = True

    status, headers, _ = call(token)

    assert taken == ["/t/acme/mcp"]
    assert status == 301
    assert (b"Location", b"https://testserver/t/acme/mcp") in headers


def test_the_request_signals_are_sent_once_each(token: str, taken: list[str]):
    sent: list[str] = []

    def started(**kwargs: Any) -> None:
        sent.append("started")

    def finished(**kwargs: Any) -> None:
        sent.append("finished")

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        status, _, _ = call(token)
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)

    assert taken == ["/t/acme/mcp"]
    assert status == 200
    assert sent == ["started", "finished"]


def test_request_started_is_sent_in_the_first_hop_before_admission(
    token: str, taken: list[str], monkeypatch: pytest.MonkeyPatch
):
    seen: list[tuple[str, int]] = []
    admit = aviews.admit  # type: ignore[attr-defined]

    def started(**kwargs: Any) -> None:
        seen.append(("started", threading.get_ident()))

    def admitting(*args: Any) -> Any:
        seen.append(("admit", threading.get_ident()))
        return admit(*args)

    monkeypatch.setattr(aviews, "admit", admitting)
    signals.request_started.connect(started)
    try:
        status, _, _ = call(token)
    finally:
        signals.request_started.disconnect(started)

    assert status == 200
    assert [what for what, _ in seen] == ["started", "admit"]
    assert seen[0][1] == seen[1][1] != threading.get_ident()


def test_a_request_hops_to_its_thread_twice(
    token: str, taken: list[str], monkeypatch: pytest.MonkeyPatch
):
    """The admission, then the response's close (``request_finished``):
    ``request_started`` rides on the first, giving the thread back on none."""
    hops: list[str] = []
    submit = ThreadPoolExecutor.submit

    def counted(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(self._thread_name_prefix)
        return submit(self, fn, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", counted)

    status, _, _ = call(token)

    assert taken == ["/t/acme/mcp"]
    assert status == 200
    assert hops.count("mcp-request") == 2


def test_a_mount_under_the_sites_own_prefix_is_served(
    token: str, settings: Any, taken: list[str]
):
    settings.ROOT_URLCONF = __name__
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "PUBLIC_BASE_URL": "http://testserver/app/site/gateway",
    }

    status, _, body = call(token, path="/app/site/gateway/acme/mcp", root_path="/app")

    assert taken == ["/app/site/gateway/acme/mcp"]
    assert status == 200, body
    assert json.loads(body)["result"]["tools"] == []


def test_an_unknown_middleware_sends_the_mount_through_the_chain(
    token: str, settings: Any, taken: list[str]
):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.Recording"]
    seen_by_middleware.clear()

    status, _, _ = call(token)

    assert status == 200
    assert taken == []
    assert seen_by_middleware == ["/t/acme/mcp"]


def test_other_paths_ending_in_mcp_go_through_the_chain(taken: list[str]):
    status, headers, _ = call(None, path="/api/acme/mcp")

    assert taken == []
    assert status == 301  # CommonMiddleware's APPEND_SLASH: the chain ran
    assert (b"Location", b"/api/acme/mcp/") in headers


def test_an_error_in_the_view_is_a_bare_500(
    token: str, monkeypatch: pytest.MonkeyPatch, taken: list[str]
):
    def broken(request: HttpRequest, slug: str) -> None:
        raise RuntimeError("SELECT secret FROM internals")

    monkeypatch.setattr(aviews, "_admit_and_scope", broken)

    status, _, body = call(token)

    assert taken == ["/t/acme/mcp"]
    assert status == 500
    assert b"secret" not in body
    assert b"Traceback" not in body
