"""A client that closes its connection mid-call cancels the call, on both
eras under both servers; a keep-alive client sending its next request
meanwhile has not gone.

``MCP_MAX_CONCURRENT_CALLS_PER_TENANT=1``, counted in Redis: the lease
keys tell when a call runs, and a follow-up call is ``BUSY`` while the
cancelled one still holds its lease. ``demo_slow`` runs 20 s unless its
signal stops it; the audit row says how the call ended.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.db import connection

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import Tenant
from tests.live import rawhttp
from tests.live.servers import Server, database_url, running
from tests.services import redis_running

REDIS_DB = 11
LEASES = ":1:mcpgw:cc:*"  # Django's key prefix and version, then the slot
ERAS = ["2025-11-25", "2026-07-28"]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_running(), reason="needs Redis on 6379"),
]

SERVER_ENV = {
    "MCP_MAX_CONCURRENT_CALLS_PER_TENANT": "1",
    "CACHE_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
}


@pytest.fixture
def leases() -> Iterator[redis.Redis]:
    client = redis.Redis(db=REDIS_DB)
    for key in client.scan_iter(LEASES):
        client.delete(key)
    yield client
    for key in client.scan_iter(LEASES):
        client.delete(key)
    client.close()


@pytest.fixture
def secret(server: Server, leases: redis.Redis) -> str:
    return new_secret()


def new_secret() -> str:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.slow", "demo.echo"])
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


def message(version: str, request_id: int, name: str, arguments: Any) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if version >= "2026":
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    return json.dumps(body | {"params": params}).encode()


def request(
    server: Server,
    secret: str,
    version: str,
    name: str,
    arguments: Any,
    *,
    request_id: int = 1,
    keep_alive: bool = False,
) -> bytes:
    """The request's bytes; ``keep_alive`` leaves the connection open."""
    body = message(version, request_id, name, arguments)
    lines = [
        "POST /t/acme/mcp HTTP/1.1",
        f"Host: 127.0.0.1:{server.port}",
        f"Authorization: Bearer {secret}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"MCP-Protocol-Version: {version}",
        f"Content-Length: {len(body)}",
    ]
    if version >= "2026":
        lines += ["Mcp-Method: tools/call", f"Mcp-Name: {name}"]
    if not keep_alive:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def call(server: Server, secret: str, version: str, name: str, arguments: Any) -> Any:
    data = request(server, secret, version, name, arguments)
    response = rawhttp.send(server.host, server.port, data, timeout=60)
    assert response.status == 200, response.body[:300]
    return result_of(response.body)


def result_of(body: bytes) -> Any:
    """The JSON-RPC result, from a JSON body or the last SSE event."""
    text = body.decode()
    if text.lstrip().startswith("{"):
        return json.loads(text)["result"]
    data = [ln[5:] for ln in text.splitlines() if ln.startswith("data:")]
    return json.loads(data[-1])["result"]


def code(result: dict[str, Any]) -> str | None:
    if not result.get("isError"):
        return None
    return str(json.loads(result["content"][0]["text"])["code"])


def eventually(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("never happened")


def in_flight(client: redis.Redis) -> int:
    return len(list(client.scan_iter(LEASES)))


def outcomes() -> list[str]:
    return list(ToolCall.objects.order_by("pk").values_list("outcome", flat=True))


@pytest.mark.parametrize("version", ERAS)
def test_a_client_closing_its_connection_cancels_the_call(
    server, secret, leases, version
):
    sock = socket.create_connection((server.host, server.port), timeout=10)
    with sock:
        sock.sendall(request(server, secret, version, "demo_slow", {"seconds": 20}))
        eventually(lambda: in_flight(leases) == 1)
        busy = call(server, secret, version, "demo_echo", {"text": "x"})

    # Within 10 s of the close, where the engine would run 20 s: its signal
    # stopped it, the row says so and the lease is back.
    eventually(lambda: outcomes() == ["busy", "cancelled"])
    eventually(lambda: in_flight(leases) == 0)
    after = call(server, secret, version, "demo_echo", {"text": "x"})

    assert code(busy) == "BUSY"
    assert code(after) is None
    assert outcomes() == ["busy", "cancelled", "ok"]


def test_under_gunicorns_sync_worker_too(leases, tmp_path):
    # One thread: the closed call must end before anything else is served.
    secret = new_secret()
    url = database_url(connection.settings_dict)
    env: dict[str, Any] = {**SERVER_ENV, "MCPGW_GUNICORN_THREADS": "1"}
    with running("gunicorn", url, tmp_path, **env) as server:
        sock = socket.create_connection((server.host, server.port), timeout=10)
        with sock:
            data = request(server, secret, ERAS[1], "demo_slow", {"seconds": 20})
            sock.sendall(data)
            eventually(lambda: in_flight(leases) == 1)

        eventually(lambda: outcomes() == ["cancelled"])
        after = call(server, secret, ERAS[1], "demo_echo", {"text": "x"})

    assert code(after) is None
    assert outcomes() == ["cancelled", "ok"]


@pytest.mark.parametrize("version", ERAS)
def test_a_keep_alive_client_sending_its_next_request_has_not_gone(
    server, secret, leases, version
):
    first = request(
        server, secret, version, "demo_slow", {"seconds": 1}, keep_alive=True
    )
    second = request(
        server, secret, version, "demo_echo", {"text": "next"}, request_id=2
    )
    with socket.create_connection((server.host, server.port), timeout=30) as sock:
        sock.sendall(first)
        eventually(lambda: in_flight(leases) == 1)
        sock.sendall(second)  # waits in the socket while the first call runs
        received = b""
        while chunk := sock.recv(65536):
            received += chunk

    answers = received.split(b"HTTP/1.1 ")[1:]
    assert len(answers) == 2, received[:500]
    slow, echo = (rawhttp.parse(b"HTTP/1.1 " + answer) for answer in answers)
    assert result_of(slow.body)["structuredContent"] == {"waited": 1.0}
    assert result_of(echo.body)["structuredContent"] is not None
    assert outcomes() == ["ok", "ok"]
