"""Live catalog, the edges: WSGI has no stream, the official client listens,
a bus restart resyncs listeners, a server's shutdown ends its streams."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_gateway import bookkeeping, bus, tokens
from mcp_gateway.models import Tenant
from tests.http.listening import (
    LIST_CHANGED,
    Stream,
    listen_body,
    modern_headers,
    prime,
)
from tests.live.servers import (
    ROOT,
    Server,
    command,
    database_url,
    free_port,
    wait_for_port,
)
from tests.mcp_gateway.bus.helpers import REDIS_URL, need_redis, need_redis_server
from tests.mcp_gateway.bus.test_reconnect import RedisServer

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_ENV = {"CACHE_URL": REDIS_URL, "MCP_SSE_KEEPALIVE_SECONDS": "1"}
TOOLS = ["demo.echo", "demo.add"]
INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}


def redis_caches(url: str) -> dict[str, Any]:
    backend = "django.core.cache.backends.redis.RedisCache"
    return {"default": {"BACKEND": backend, "LOCATION": url}}


@pytest.fixture(autouse=True)
def shared_bus(settings: Any) -> Iterator[None]:
    if connection.vendor != "postgresql":
        need_redis()
        settings.CACHES = redis_caches(REDIS_URL)
    yield
    bus.close()


@pytest.fixture
def tenant(django_db_setup: None) -> Tenant:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, TOOLS)
    return tenant


@pytest.fixture
def alice(tenant: Tenant) -> str:
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


def rpc(server: Server, secret: str, method: str, params: Any, version: str) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
    }
    if version == "2026-07-28":
        headers = modern_headers(secret, method)
        body = listen_body() | {"method": method, "params": {"_meta": _meta()}}
    return httpx2.post(f"{server.url}/t/acme/mcp", json=body, headers=headers)


def _meta() -> dict[str, Any]:
    meta: dict[str, Any] = listen_body()["params"]["_meta"]
    return meta


def tools_capability(server: Server, secret: str, modern: bool) -> dict[str, Any]:
    if modern:
        answer = rpc(server, secret, "server/discover", None, "2026-07-28")
    else:
        answer = rpc(server, secret, "initialize", INITIALIZE, "2025-11-25")
    assert answer.status_code == 200, answer.text
    tools: dict[str, Any] = answer.json()["result"]["capabilities"]["tools"]
    return tools


@pytest.mark.parametrize("modern", [False, True])
def test_list_changed_is_advertised_exactly_under_asgi(server, alice, modern):
    tools = tools_capability(server, alice, modern)

    assert tools.get("listChanged", False) is (server.kind == "uvicorn")


@pytest.mark.parametrize("server", ["gunicorn"], indirect=True)
def test_under_wsgi_get_is_405_and_listen_an_unknown_method(server, alice):
    get = httpx2.get(
        f"{server.url}/t/acme/mcp",
        headers={"Authorization": f"Bearer {alice}", "Accept": "text/event-stream"},
    )
    listen = httpx2.post(
        f"{server.url}/t/acme/mcp",
        json=listen_body(),
        headers=modern_headers(alice, "subscriptions/listen"),
    )

    assert (get.status_code, get.headers["Allow"]) == (405, "POST")
    assert listen.status_code == 404
    assert listen.json()["error"]["code"] == -32601


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_the_official_client_listens_and_relists(server, tenant, alice):
    prime(server, alice)

    async def scenario() -> tuple[list[str], list[str]]:
        auth = {"Authorization": f"Bearer {alice}"}
        async with httpx2.AsyncClient(headers=auth, timeout=30) as http:
            url = f"{server.url}/t/acme/mcp"
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport) as client:
                before = [t.name for t in (await client.list_tools()).tools]
                async with client.listen(tools_list_changed=True) as subscription:
                    await asyncio.to_thread(unexpose_in_thread, tenant, "demo.echo")
                    async with asyncio.timeout(5):
                        async for _event in subscription:
                            break
                    after = [t.name for t in (await client.list_tools()).tools]
                return before, after

    before, after = asyncio.run(scenario())

    assert "demo_echo" in before
    assert "demo_echo" not in after


def unexpose_in_thread(tenant: Tenant, engine_id: str) -> None:
    """Unexpose from a worker thread, closing that thread's connection."""
    try:
        bookkeeping.unexpose(tenant, engine_id)
    finally:
        connections.close_all()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    redis = RedisServer(need_redis_server(), tmp_path)
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()


@pytest.fixture
def uvicorn_on(django_db_setup: None, tmp_path: Path) -> Iterator[Any]:
    """Start uvicorn with ``env``; yields (server, process)."""
    started: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []

    def start(**env: str) -> tuple[Server, subprocess.Popen[bytes]]:
        port = free_port()
        environ = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": database_url(connection.settings_dict),
            **env,
        }
        log = (tmp_path / "uvicorn.log").open("wb")
        process = subprocess.Popen(
            command("uvicorn", port), cwd=ROOT, env=environ, stdout=log, stderr=log
        )
        started.append(process)
        logs.append(log)
        wait_for_port(port, process)
        return Server("uvicorn", "127.0.0.1", port, tmp_path / "probe"), process

    yield start
    for process in started:
        if process.poll() is None:
            process.terminate()  # by the pid this fixture started
            process.wait(10)
    for log in logs:
        log.close()


def test_listeners_resync_after_the_redis_bus_restarts(
    settings, own_redis, uvicorn_on, tenant, alice
):
    settings.CACHES = redis_caches(own_redis.url)
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "redis"}
    live, _ = uvicorn_on(
        CACHE_URL=own_redis.url, MCP_BUS="redis", MCP_SSE_KEEPALIVE_SECONDS="1"
    )
    prime(live, alice)
    with Stream(live, alice, modern=False) as old, Stream(live, alice, modern=True):
        own_redis.stop()
        own_redis.start()
        old.wait_for(LIST_CHANGED, timeout=10)  # they may have missed one
        bookkeeping.unexpose(tenant, "demo.echo")
        old.wait_for(LIST_CHANGED, count=2, timeout=5)


def test_a_shutdown_ends_the_streams_gracefully(uvicorn_on, tenant, alice):
    live, process = uvicorn_on(CACHE_URL=REDIS_URL, MCP_SSE_KEEPALIVE_SECONDS="30")
    with Stream(live, alice, modern=True) as stream:
        stream.wait_for("notifications/subscriptions/acknowledged")
        process.send_signal(signal.SIGTERM)
        assert stream.ended.wait(10), "the stream outlived its server"
        # uvicorn re-raises the signal once it has drained: -SIGTERM.
        assert process.wait(10) in (0, -signal.SIGTERM)

    last = stream.messages()[-1]
    assert last["id"] == "sub-1"
    assert "result" in last, json.dumps(last)
