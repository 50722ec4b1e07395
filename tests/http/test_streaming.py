"""Progress and log lines over SSE under uvicorn; plain JSON under gunicorn."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import Tenant
from tests.live.events import Event, events
from tests.live.servers import Server

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_ENV = {"MCP_SSE_KEEPALIVE_SECONDS": "0.3"}
TOOLS = ["test.async_ticker", "test.sync_ticker", "test.quiet", "demo.echo"]
BOTH = "application/json, text/event-stream"
MODERN = "2026-07-28"


@pytest.fixture
def secret(server: Server) -> str:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, TOOLS)
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


def call(
    name: str,
    arguments: dict[str, Any],
    meta: dict[str, Any] | None = None,
    *,
    modern: bool = False,
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if modern:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
            **(meta or {}),
        }
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def headers(secret: str, name: str, *, modern: bool = False) -> dict[str, str]:
    sent = {"Authorization": f"Bearer {secret}", "Accept": BOTH}
    if modern:
        sent |= {
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
        }
    else:
        sent["MCP-Protocol-Version"] = "2025-11-25"
    return sent


def post(server: Server, secret: str, body: dict[str, Any], **kw: Any) -> Any:
    name = body["params"]["name"]
    return httpx2.stream(
        "POST",
        f"{server.url}/t/acme/mcp",
        json=body,
        headers=headers(secret, name, **kw),
        timeout=20,
    )


def collect(server: Server, secret: str, body: dict[str, Any], **kw: Any) -> Any:
    with post(server, secret, body, **kw) as response:
        return response, list(events(response))


def methods(received: list[Event]) -> list[str]:
    return [e.data.get("method", "result") for e in received if e.data is not None]


def wait_for_probe(server: Server, line: str, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while line not in server.engine_runs() and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_progress_and_log_lines_stream_before_the_result_on_the_2025_wires(
    server, secret
):
    body = call("test_async_ticker", {"steps": 3}, {"progressToken": "tok"})

    response, received = collect(server, secret, body)

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["x-accel-buffering"] == "no"
    assert methods(received) == [
        "notifications/progress",
        "notifications/message",
    ] * 3 + ["result"]
    progress = [e.data["params"] for e in received[:-1:2]]
    assert [p["progress"] for p in progress] == [1, 2, 3]
    assert {p["progressToken"] for p in progress} == {"tok"}
    logs = [e.data["params"] for e in received[1:-1:2]]
    assert [line["level"] for line in logs] == ["info"] * 3  # debug is dropped
    assert received[-1].data["id"] == 7
    assert received[-1].data["result"]["structuredContent"] == {"steps": 3}


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_on_2026_log_lines_come_only_with_the_log_level_opt_in(server, secret):
    quiet = call("test_async_ticker", {"steps": 2}, modern=True)
    opted = call(
        "test_async_ticker",
        {"steps": 2},
        {"io.modelcontextprotocol/logLevel": "debug"},
        modern=True,
    )

    plain, _ = collect(server, secret, quiet, modern=True)
    _, received = collect(server, secret, opted, modern=True)

    assert plain.headers["content-type"].startswith("application/json")
    assert methods(received) == ["notifications/message"] * 4 + ["result"]
    levels = [e.data["params"]["level"] for e in received[:-1]]
    assert levels == ["info", "debug", "info", "debug"]


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_a_quiet_call_keeps_the_stream_alive_with_comment_lines(server, secret):
    body = call("test_quiet", {"seconds": 1.0})

    response, received = collect(server, secret, body)

    assert response.headers["content-type"] == "text/event-stream"
    assert any(event.comment == "keep-alive" for event in received)
    assert received[-1].data["result"]["structuredContent"] == {"slept": True}


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_a_quick_call_with_nothing_to_stream_is_plain_json(server, secret):
    body = call("demo_echo", {"text": "hi"}, {"progressToken": 1})

    with post(server, secret, body) as response:
        response.read()

    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["structuredContent"] == {"text": "hi"}


@pytest.mark.parametrize("server", ["gunicorn"], indirect=True)
def test_under_wsgi_the_same_call_is_plain_json_without_progress(server, secret):
    body = call("test_async_ticker", {"steps": 2}, {"progressToken": "tok"})

    with post(server, secret, body) as response:
        response.read()

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["structuredContent"] == {"steps": 2}


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
@pytest.mark.parametrize(
    ("tool", "stopped"),
    [("test_async_ticker", "async-cancelled"), ("test_sync_ticker", "sync-cancelled")],
)
def test_closing_the_stream_cancels_the_call(server, secret, tool, stopped):
    body = call(tool, {"steps": 30}, {"progressToken": "tok"})
    before = len(server.engine_runs())

    with post(server, secret, body) as response:
        first = next(events(response))

    wait_for_probe(server, stopped)
    time.sleep(3.5)  # the uncancelled call would have finished by now
    assert first.data["method"] == "notifications/progress"
    assert server.engine_runs()[before:] == [stopped]


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"], indirect=True)
def test_a_cancelled_notification_is_accepted_and_ignored(server, secret):
    body = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "user"},
    }

    response = httpx2.post(
        f"{server.url}/t/acme/mcp",
        json=body,
        headers={"Authorization": f"Bearer {secret}", "Accept": BOTH},
        timeout=20,
    )

    assert response.status_code == 202
    assert response.content == b""
