"""One tenant cannot starve the others: the per-tenant cap, on live servers.

``MCP_MAX_CONCURRENT_CALLS_PER_TENANT=2``, counted in Redis (as a
deployment of several workers counts it); ``demo_slow`` holds a lease for
as long as it waits. The test reads the lease keys in Redis to know when
calls are in flight (a probing call would take a lease itself), and
asserts outcomes and order (which answer came before which), never how
long anything took.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.db import connection

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.limits import concurrency
from mcp_gateway.models import Tenant
from tests.live import rawhttp
from tests.live.servers import Server, database_url, running
from tests.services import redis_running

REDIS_DB = 12
LEASES = ":1:mcpgw:cc:*"  # Django's key prefix and version, then the slot


pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_running(), reason="needs Redis on 6379"),
]

SERVER_ENV = {
    "MCP_MAX_CONCURRENT_CALLS_PER_TENANT": "2",
    "CACHE_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
}


@pytest.fixture
def leases() -> Iterator[redis.Redis]:
    """The lease keys the server keeps; only these are ever deleted."""
    client = redis.Redis(db=REDIS_DB)
    _forget(client)
    yield client
    _forget(client)
    client.close()


def _forget(client: redis.Redis) -> None:
    for key in client.scan_iter(LEASES):
        client.delete(key)


def in_flight(client: redis.Redis, slug: str) -> int:
    return len(list(client.scan_iter(f":1:mcpgw:cc:{slug}:*")))


@pytest.fixture
def secrets(server: Server, leases: redis.Redis) -> dict[str, str]:
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


def test_a_tenant_at_its_cap_is_busy_and_another_tenant_is_served(
    server, secrets, leases
):
    finished: list[str] = []

    def slow() -> None:
        result = call(server, secrets["acme"], "acme", "demo_slow", {"seconds": 4})
        finished.append(f"slow:{code(result)}")

    slows = [threading.Thread(target=slow) for _ in range(2)]
    for thread in slows:
        thread.start()
    eventually(lambda: in_flight(leases, "acme") == 2)
    ttls = [leases.ttl(key) for key in leases.scan_iter(LEASES)]

    refused = call(server, secrets["acme"], "acme", "demo_slow", {"seconds": 0})
    served = echo(server, secrets, "globex")
    finished.append("globex")
    for thread in slows:
        thread.join()
    left = in_flight(leases, "acme")
    after = echo(server, secrets, "acme")

    assert code(refused) == "BUSY"
    assert served is None
    assert finished == ["globex", "slow:None", "slow:None"]
    assert left == 0  # the leases came back
    assert after is None
    # A worker that dies holding one leaks it for the deadline + margin only.
    assert all(0 < ttl <= 30 + concurrency.MARGIN_SECONDS for ttl in ttls)
    outcomes = sorted(ToolCall.objects.values_list("outcome", flat=True))
    assert outcomes == ["busy", "ok", "ok", "ok", "ok"]


def test_a_client_gone_away_gives_its_lease_back(server, secrets, leases):
    sockets = []
    try:
        for _ in range(2):
            sock = socket.create_connection((server.host, server.port), timeout=10)
            sockets.append(sock)
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
        eventually(lambda: in_flight(leases, "acme") == 2)
    finally:
        for sock in sockets:
            sock.close()

    eventually(lambda: in_flight(leases, "acme") == 0)
    assert echo(server, secrets, "acme") is None
    assert sorted(ToolCall.objects.values_list("outcome", flat=True)) == [
        "cancelled",
        "cancelled",
        "ok",
    ]


def test_the_cap_is_counted_across_processes(server, secrets, leases, tmp_path):
    # A second server process (another worker or host, as far as the count
    # knows) shares the cap through Redis: one slow call on each fills it.
    other_kind = "uvicorn" if server.kind == "gunicorn" else "gunicorn"
    db_url = database_url(connection.settings_dict)
    env: dict[str, Any] = SERVER_ENV
    with running(other_kind, db_url, tmp_path, **env) as other:
        threads = [
            threading.Thread(
                target=call,
                args=(live, secrets["acme"], "acme", "demo_slow", {"seconds": 3}),
            )
            for live in (server, other)
        ]
        for thread in threads:
            thread.start()
        eventually(lambda: in_flight(leases, "acme") == 2)

        refused_here = call(server, secrets["acme"], "acme", "demo_echo", {"text": "x"})
        refused_there = call(other, secrets["acme"], "acme", "demo_echo", {"text": "x"})
        served = echo(other, secrets, "globex")
        for thread in threads:
            thread.join()

    assert code(refused_here) == "BUSY"
    assert code(refused_there) == "BUSY"
    assert served is None
    # Under uvicorn the lease is given back after the answer has gone out.
    eventually(lambda: in_flight(leases, "acme") == 0)
