"""Official SDK clients cancel a ``demo_slow`` call mid-way, on both eras
under both servers: the 2025 wires by ``notifications/cancelled``, 2026-07-28
by aborting the request. The Python SDK (mcp) and the TypeScript SDK (v1 for
2025-11-25, v2 in ``auto`` and ``legacy``; ``clients/cancel.mjs``).

``MCP_MAX_CONCURRENT_CALLS_PER_TENANT=1``, counted in Redis: the lease key
tells when the call runs, and its going when the engine has stopped
(``demo_slow`` would run 30 s). The audit row says ``cancelled``; a call
after it in the same session is served. A 2025 client's cancel is also sent
to a second server sharing the cache and the bus (another worker, another
kind): each client POSTs its ``notifications/cancelled`` there.
"""

from __future__ import annotations

import asyncio
import json
import selectors
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
import redis
from django.contrib.auth.models import User
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import Tenant
from tests.live.node import CLIENTS, NODE_BIN, node_env
from tests.live.servers import Server, database_url, running
from tests.services import redis_running

REDIS_DB = 10
LEASES = ":1:mcpgw:cc:*"  # Django's key prefix and version, then the slot
RUNNING = ":1:mcpgw:running:*"  # a 2025 call a cancel can find
ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_running(), reason="needs Redis on 6379"),
]

SERVER_ENV = {
    "MCP_MAX_CONCURRENT_CALLS_PER_TENANT": "1",
    "CACHE_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
    "MCP_BUS": "redis",
}


@pytest.fixture
def leases() -> Iterator[redis.Redis]:
    client = redis.Redis(db=REDIS_DB)
    forget(client)
    yield client
    forget(client)
    client.close()


def forget(client: redis.Redis) -> None:
    for pattern in (LEASES, RUNNING):
        for key in client.scan_iter(pattern):
            client.delete(key)


@pytest.fixture(scope="module")
def other(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of the other kind, sharing the database, cache and bus."""
    kind = "uvicorn" if server.kind == "gunicorn" else "gunicorn"
    tmp = tmp_path_factory.mktemp(f"other-{kind}")
    env: dict[str, Any] = SERVER_ENV
    with running(kind, database_url(connection.settings_dict), tmp, **env) as live:
        yield live


@pytest.fixture
def secret(server: Server, leases: redis.Redis) -> str:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.slow", "demo.echo"])
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


def in_flight(client: redis.Redis) -> int:
    return len(list(client.scan_iter(LEASES)))


def cancellable(client: redis.Redis, version: str) -> Callable[[], bool]:
    """Whether the call runs, and on the 2025 wires is noted for a cancel
    (a cancel sooner would find nothing: docs/architecture.md)."""

    def check() -> bool:
        if in_flight(client) != 1:
            return False
        return version >= "2026" or any(client.scan_iter(RUNNING))

    return check


def eventually(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("never happened")


def outcomes() -> list[str]:
    return sorted(ToolCall.objects.values_list("outcome", flat=True))


# -- The Python SDK ------------------------------------------------------------


async def until(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("never happened")


class CancelsElsewhere(httpx2.AsyncBaseTransport):
    """POSTs every ``notifications/cancelled`` to ``port``; counts them."""

    def __init__(self, port: int | None) -> None:
        self.port = port
        self.routed = 0
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.port is not None and b'"notifications/cancelled"' in request.content:
            self.routed += 1
            request.url = request.url.copy_with(port=self.port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _python_cancel(
    url: str,
    secret: str,
    mode: str,
    leases: redis.Redis,
    version: str,
    cancel_port: int | None = None,
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {secret}"}
    transport = CancelsElsewhere(cancel_port)
    async with (
        httpx2.AsyncClient(headers=headers, transport=transport) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        slow = asyncio.ensure_future(client.call_tool("demo_slow", {"seconds": 30}))
        await until(cancellable(leases, version))
        slow.cancel()
        await asyncio.gather(slow, return_exceptions=True)
        await until(lambda: in_flight(leases) == 0)  # the engine stopped
        echo = await client.call_tool("demo_echo", {"text": "after"})
        return {
            "version": client.protocol_version,
            "echo": echo,
            "routed": transport.routed,
        }


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_the_python_sdk_cancels_a_call(server, secret, leases, mode, version):
    url = f"{server.url}/t/acme/mcp"

    session = asyncio.run(_python_cancel(url, secret, mode, leases, version))

    assert session["version"] == version
    assert session["echo"].is_error is not True
    eventually(lambda: outcomes() == ["cancelled", "ok"])


# -- The TypeScript SDK ----------------------------------------------------------


class Script:
    """``clients/cancel.mjs``, driven line by line."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [str(NODE_BIN / "node"), str(CLIENTS / "cancel.mjs"), *args],
            cwd=CLIENTS,
            env=node_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def read(self) -> dict[str, Any]:
        stdout = self.process.stdout
        assert stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            if not selector.select(timeout=60):
                raise AssertionError("the client said nothing")
        line = stdout.readline()
        if not line:
            stderr = self.process.stderr
            raise AssertionError(stderr.read() if stderr is not None else "")
        said: dict[str, Any] = json.loads(line)
        return said

    def tell(self, line: str) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(f"{line}\n")
        stdin.flush()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=10)


@pytest.fixture
def script() -> Iterator[Callable[..., Script]]:
    started: list[Script] = []

    def start(*args: str) -> Script:
        started.append(Script(*args))
        return started[-1]

    yield start
    for each in started:
        each.close()


@pytest.mark.parametrize(
    ("sdk", "mode", "version"),
    [
        ("v1", "legacy", "2025-11-25"),
        ("v2", "legacy", "2025-11-25"),
        ("v2", "auto", "2026-07-28"),
    ],
)
def test_the_typescript_sdk_cancels_a_call(
    server, secret, leases, script, sdk, mode, version
):
    client = script(sdk, mode, f"{server.url}/t/acme/mcp", secret)
    started = client.read()
    eventually(cancellable(leases, version))
    client.tell("cancel")
    aborted = client.read()
    eventually(lambda: in_flight(leases) == 0)  # the engine stopped
    client.tell("echo")
    echo = client.read()

    assert started == {"started": version}
    assert aborted["aborted"] is not None  # the call failed: aborted
    assert echo["echo"].get("isError") is not True
    eventually(lambda: outcomes() == ["cancelled", "ok"])


# -- A 2025 cancel on another worker ------------------------------------------------


@pytest.mark.parametrize("sdk", ["python", "v1", "v2"])
def test_a_2025_cancel_posted_to_another_worker_stops_the_call(
    server, other, secret, leases, script, sdk
):
    url = f"{server.url}/t/acme/mcp"
    if sdk == "python":
        session = asyncio.run(
            _python_cancel(url, secret, "legacy", leases, "2025-11-25", other.port)
        )
        routed, echo = session["routed"], session["echo"].is_error
    else:
        client = script(sdk, "legacy", url, secret, f"{other.url}/t/acme/mcp")
        client.read()
        eventually(cancellable(leases, "2025-11-25"))
        client.tell("cancel")
        client.read()
        eventually(lambda: in_flight(leases) == 0)  # the engine stopped
        client.tell("echo")
        said = client.read()
        routed, echo = said["routed"], said["echo"].get("isError")

    assert routed >= 1  # the cancel went to the other server
    assert echo is not True
    eventually(lambda: outcomes() == ["cancelled", "ok"])
