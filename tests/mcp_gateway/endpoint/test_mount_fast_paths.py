"""Both servers' fast paths (ASGI: ``fastpath``, WSGI: ``wsgifast``): the MCP
mount served without the middleware it has no use for, with what the site's
chain gave its responses kept (headers, host check, redirects, signals,
errors). Each test runs through each server's real guard; what only one
server does is tested in test_fastpath.py (ASGI) and test_wsgi_fastpath.py
(WSGI)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.sessions.middleware import SessionMiddleware
from django.core import signals
from django.http import HttpRequest

from tests.mcp_gateway.endpoint import servers
from tests.mcp_gateway.endpoint.servers import SERVERS, Server

# Requests use their threads (ASGI); the handler closes its connections
# after each request, as a server's does (WSGI).
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest) -> Server:
    return SERVERS[request.param]


@pytest.fixture
def taken(server: Server, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the server's fast path served."""
    return server.taken(monkeypatch)


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


def test_the_mount_skips_the_unused_middleware_and_keeps_the_headers(
    server: Server, token: str, settings: Any, taken: list[str], sessions: list[str]
) -> None:
    fast = server.post(token)
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, server.fast_path: False}
    chain = server.post(token)

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
        "content-length",
    } <= names
    assert json.loads(fast[2]) == json.loads(chain[2])


def test_a_host_outside_allowed_hosts_is_refused(
    server: Server, token: str, taken: list[str]
):
    status, _, body = server.post(token, host="evil.example")

    assert taken == ["/t/acme/mcp"]
    assert status == 400
    assert b"evil.example" not in body


def test_the_ssl_redirect_still_applies(
    server: Server, token: str, settings: Any, taken: list[str]
):
    settings.SECURE_SSL_REDIRECT = True

    status, headers, _ = server.post(token)

    assert taken == ["/t/acme/mcp"]
    assert status == 301
    assert ("Location", "https://testserver/t/acme/mcp") in headers


def test_the_request_signals_are_sent_once_each(
    server: Server, token: str, taken: list[str]
):
    sent: list[str] = []

    def started(**kwargs: Any) -> None:
        sent.append("started")

    def finished(**kwargs: Any) -> None:
        sent.append("finished")

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        status, _, _ = server.post(token)
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)

    assert taken == ["/t/acme/mcp"]
    assert status == 200
    assert sent == ["started", "finished"]


@pytest.mark.parametrize(
    ("server", "where", "served"),
    [
        # ASGI: the path is the whole path, the prefix its root_path.
        (
            "asgi",
            {"path": "/app/site/gateway/acme/mcp", "root_path": "/app"},
            "/app/site/gateway/acme/mcp",
        ),
        # WSGI: the prefix is SCRIPT_NAME, the path (PATH_INFO) what follows.
        (
            "wsgi",
            {"path": "/site/gateway/acme/mcp", "script_name": "/app"},
            "/site/gateway/acme/mcp",
        ),
    ],
    indirect=["server"],
    ids=["asgi", "wsgi"],
)
def test_a_mount_under_the_sites_own_prefix_is_served(
    server: Server,
    where: dict[str, str],
    served: str,
    token: str,
    settings: Any,
    taken: list[str],
):
    settings.ROOT_URLCONF = servers.__name__
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "PUBLIC_BASE_URL": "http://testserver/app/site/gateway",
    }

    status, _, body = server.post(token, **where)

    assert taken == [served]
    assert status == 200, body
    assert json.loads(body)["result"]["tools"] == []


def test_an_unknown_middleware_sends_the_mount_through_the_chain(
    server: Server, token: str, settings: Any, taken: list[str]
):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{servers.__name__}.Recording"]
    servers.seen_by_middleware.clear()

    status, _, _ = server.post(token)

    assert status == 200
    assert taken == []
    assert servers.seen_by_middleware == ["/t/acme/mcp"]


def test_other_paths_ending_in_mcp_go_through_the_chain(
    server: Server, taken: list[str]
):
    status, headers, _ = server.post(None, path="/api/acme/mcp")

    assert taken == []
    assert status == 301  # CommonMiddleware's APPEND_SLASH: the chain ran
    assert ("Location", "/api/acme/mcp/") in headers


def test_an_error_in_the_view_is_a_bare_500(
    server: Server, token: str, monkeypatch: pytest.MonkeyPatch, taken: list[str]
):
    def broken(*args: Any) -> None:
        raise RuntimeError("SELECT secret FROM internals")

    monkeypatch.setattr(*server.admission, broken)

    status, _, body = server.post(token)

    assert taken == ["/t/acme/mcp"]
    assert status == 500
    assert b"secret" not in body
    assert b"Traceback" not in body
