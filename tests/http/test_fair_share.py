"""One tenant cannot starve the others: the per-tenant cap, on live servers.

``MCP_MAX_CONCURRENT_CALLS_PER_TENANT=2``; ``demo_slow`` holds a lease for
as long as it waits. The assertions are about outcomes and order (which
answer came before which), never about how long anything took.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit_models import ToolCall
from mcp_gateway.models import Tenant
from tests.live import rawhttp
from tests.live.servers import Server

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_ENV = {"MCP_MAX_CONCURRENT_CALLS_PER_TENANT": "2"}


@pytest.fixture
def secrets(server: Server) -> dict[str, str]:
    found = {}
    for slug in ("acme", "globex"):
        tenant = Tenant.objects.create(slug=slug, name=slug.title())
        bookkeeping.expose_many(tenant, ["demo.slow", "demo.echo"])
        user = User.objects.create_user(f"{slug}-user")
        found[slug] = tokens.issue(tenant, user).secret
    return found


def request(
    server: Server, secret: str, slug: str, name: str, arguments: Any, **extra: str
) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    ).encode()
    headers = [
        ("Authorization", f"Bearer {secret}"),
        ("Content-Type", "application/json"),
        ("Accept", extra.get("accept", "application/json")),
    ]
    return rawhttp.request(
        "POST",
        f"/t/{slug}/mcp",
        host=f"127.0.0.1:{server.port}",
        body=body,
        headers=headers,
    )


def call(server: Server, secret: str, slug: str, name: str, arguments: Any) -> Any:
    data = request(server, secret, slug, name, arguments)
    response = rawhttp.send(server.host, server.port, data, timeout=60)
    assert response.status == 200, response.body[:300]
    return response.json()["result"]


def code(result: dict[str, Any]) -> str | None:
    if not result.get("isError"):
        return None
    return str(json.loads(result["content"][0]["text"])["code"])


def echo(server: Server, secrets: dict[str, str], slug: str) -> str | None:
    return code(call(server, secrets[slug], slug, "demo_echo", {"text": "hi"}))


def eventually(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("never happened")


def test_a_tenant_at_its_cap_is_busy_and_another_tenant_is_served(server, secrets):
    finished: list[str] = []

    def slow() -> None:
        result = call(server, secrets["acme"], "acme", "demo_slow", {"seconds": 5})
        finished.append(f"slow:{code(result)}")

    slows = [threading.Thread(target=slow) for _ in range(2)]
    for thread in slows:
        thread.start()
    eventually(lambda: echo(server, secrets, "acme") == "BUSY")  # both in flight

    refused = call(server, secrets["acme"], "acme", "demo_slow", {"seconds": 0})
    served = echo(server, secrets, "globex")
    finished.append("globex")
    for thread in slows:
        thread.join()
    after = echo(server, secrets, "acme")

    assert code(refused) == "BUSY"
    assert served is None
    assert finished == ["globex", "slow:None", "slow:None"]
    assert after is None  # the leases came back
    outcomes = list(ToolCall.objects.values_list("outcome", flat=True))
    assert outcomes.count("busy") >= 2
    assert outcomes.count("ok") >= 4


def test_a_client_gone_away_gives_its_lease_back(server, secrets):
    if server.kind != "uvicorn":
        pytest.skip("a disconnect cancels the call under ASGI only")
    sockets = []
    for _ in range(2):
        sock = socket.create_connection((server.host, server.port), timeout=10)
        sock.sendall(
            request(
                server,
                secrets["acme"],
                "acme",
                "demo_slow",
                {"seconds": 20},
                accept="application/json, text/event-stream",
            )
        )
        sockets.append(sock)
    eventually(lambda: echo(server, secrets, "acme") == "BUSY")

    for sock in sockets:
        sock.close()

    eventually(lambda: echo(server, secrets, "acme") is None)
