"""The WSGI fast path: the MCP mount served through a Django handler whose
chain holds only the middleware the mount uses, with what the site's chain
gave its responses kept (headers, host check, redirects, signals, errors)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.contrib.sessions.middleware import SessionMiddleware
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from mcp_gateway.endpoint import views, wsgifast
from mcp_gateway.wsgi import BoundaryGuard

# The handler closes its connections after each request, as a server's does.
pytestmark = pytest.mark.django_db(transaction=True)

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
    """The paths the mount's own handler served."""
    served: list[str] = []
    original = wsgifast.MountHandler.__call__

    def call(self: Any, environ: Any, start_response: Any) -> Any:
        served.append(environ["PATH_INFO"])
        return original(self, environ, start_response)

    monkeypatch.setattr(wsgifast.MountHandler, "__call__", call)
    return served


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths SessionMiddleware (skipped on the mount) looked at."""
    looked: list[str] = []
    original = SessionMiddleware.process_request

    def process_request(self: Any, request: HttpRequest) -> None:
        looked.append(request.path)
        original(self, request)

    monkeypatch.setattr(SessionMiddleware, "process_request", process_request)
    return looked


def call(
    token: str | None,
    *,
    path: str = "/t/acme/mcp",
    host: str = "testserver",
    script_name: str = "",
) -> tuple[int, list[tuple[str, str]], bytes]:
    """POST a ``tools/list`` through a fresh guard around Django's handler."""
    guard = BoundaryGuard(WSGIHandler())
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


def test_the_mount_skips_the_unused_middleware_and_keeps_the_headers(
    token: str, settings: Any, taken: list[str], sessions: list[str]
) -> None:
    fast = call(token)
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "WSGI_FAST_PATH": False}
    chain = call(token)

    assert taken == ["/t/acme/mcp"]
    assert sessions == ["/t/acme/mcp"]  # the chain's request only
    assert fast[0] == chain[0] == 200
    assert sorted(fast[1]) == sorted(chain[1])
    names = {name.lower() for name, _ in fast[1]}
    assert {
        "x-content-type-options",
        "referrer-policy",
        "cross-origin-opener-policy",
        "x-frame-options",
    } <= names
    assert json.loads(fast[2]) == json.loads(chain[2])


def test_a_host_outside_allowed_hosts_is_refused(token: str, taken: list[str]):
    status, _, body = call(token, host="evil.example")

    assert taken == ["/t/acme/mcp"]
    assert status == 400
    assert b"evil.example" not in body


def test_the_ssl_redirect_still_applies(token: str, settings: Any, taken: list[str]):
    settings.SECURE_SSL_REDIRECT = True

    status, headers, _ = call(token)

    assert taken == ["/t/acme/mcp"]
    assert status == 301
    assert ("Location", "https://testserver/t/acme/mcp") in headers


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


def test_a_mount_under_the_sites_own_prefix_is_served(
    token: str, settings: Any, taken: list[str]
):
    settings.ROOT_URLCONF = __name__
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "PUBLIC_BASE_URL": "http://testserver/app/site/gateway",
    }

    status, _, body = call(token, path="/site/gateway/acme/mcp", script_name="/app")

    assert taken == ["/site/gateway/acme/mcp"]
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
    assert ("Location", "/api/acme/mcp/") in headers


def test_the_async_view_forced_under_wsgi_goes_through_the_chain(
    token: str, settings: Any, taken: list[str]
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ASYNC_ENDPOINT": True}

    status, _, _ = call(token)

    assert taken == []
    assert status == 200


def test_an_error_in_the_view_is_a_bare_500(
    token: str, monkeypatch: pytest.MonkeyPatch, taken: list[str]
):
    def broken(*args: Any) -> None:
        raise RuntimeError("SELECT secret FROM internals")

    monkeypatch.setattr(views, "admit", broken)

    status, _, body = call(token)

    assert taken == ["/t/acme/mcp"]
    assert status == 500
    assert b"secret" not in body
    assert b"Traceback" not in body
