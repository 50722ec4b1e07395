"""Beyond one machine, on this one: a change made on host B reaches a
client listening on host A.

Each host runs its own uvicorn; they share only the database and Redis (the
change bus: PostgreSQL's NOTIFY when the tests run on PostgreSQL, Redis
pub/sub on SQLite). The hosts are two network namespaces on a private
subnet when this process may make them (root, the ``ip`` program), and in
any case two processes on loopback: the same test, the same assertions.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from django.contrib.auth.models import User
from django.db import connection

from mcp_gateway import bookkeeping, bus, tokens
from mcp_gateway.models import Tenant
from tests.deployment import hosts
from tests.http.listening import LIST_CHANGED, Stream, prime
from tests.live.servers import ROOT, Server, database_url, running_at
from tests.mcp_gateway.bus.helpers import need_redis

pytestmark = pytest.mark.django_db(transaction=True)

WITHIN_SECONDS = 1.0
"""The bound from the command's end to the notification on host A."""


@pytest.fixture(params=["namespaces", "loopback"])
def network(request: pytest.FixtureRequest) -> Iterator[hosts.Network]:
    need_redis()
    if request.param == "loopback":
        yield hosts.LOOPBACK
        return
    if not hosts.can_make_namespaces():
        pytest.skip("network namespaces need root and the ip program")
    with hosts.namespaces() as network:
        yield network


@pytest.fixture
def secret(django_db_setup: None) -> Iterator[str]:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    yield tokens.issue(tenant, User.objects.create_user("alice")).secret
    bus.close()


def server_env(network: hosts.Network) -> dict[str, str]:
    return {
        "CACHE_URL": network.redis_url,
        "MCP_SSE_KEEPALIVE_SECONDS": "1",
        "MCPGW_TEST_HOSTS": f"{network.a.address},{network.b.address}",
    }


def run_on(host: hosts.Host, db_url: str, env: dict[str, str], *args: str) -> None:
    """``manage.py ARGS`` on ``host``."""
    environ = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": db_url,
        **env,
    }
    command = [*host.prefix, sys.executable, "manage.py", *args]
    subprocess.run(
        command, cwd=ROOT, env=environ, check=True, capture_output=True, timeout=60
    )


def tool_names(server: Server, secret: str) -> set[str]:
    answer = httpx2.post(
        f"{server.url}/t/acme/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Authorization": f"Bearer {secret}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        },
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return {tool["name"] for tool in answer.json()["result"]["tools"]}


@pytest.mark.parametrize("modern", [False, True], ids=["get", "listen"])
def test_a_command_on_host_b_notifies_a_listener_on_host_a(
    network: hosts.Network, secret: str, tmp_path: Path, modern: bool
) -> None:
    db_url = network.reach(database_url(connection.settings_dict))
    env = server_env(network)
    a, b = network.a, network.b
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        running_at(a.placement(), "uvicorn", db_url, tmp_path / "a", env) as on_a,
        running_at(b.placement(2), "uvicorn", db_url, tmp_path / "b", env) as on_b,
    ):
        assert "demo_echo" in tool_names(on_a, secret)
        prime(on_a, secret)
        with Stream(on_a, secret, modern=modern) as stream:
            assert stream.status == 200
            run_on(b, db_url, env, "mcp_unexpose", "acme", "demo.echo")
            done = time.monotonic()
            arrived = stream.wait_for(LIST_CHANGED, timeout=WITHIN_SECONDS + 5)
        after_a, after_b = tool_names(on_a, secret), tool_names(on_b, secret)

    assert arrived - done < WITHIN_SECONDS
    assert "demo_echo" not in after_a
    assert "demo_add" in after_a
    assert after_b == after_a
