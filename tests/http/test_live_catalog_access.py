"""Live catalog, who may listen: exactly who may list.

The GET stream (2025 eras) needs what ``tools/list`` needs: a valid
credential of the tenant. Scopes refuse calls, never the catalog, so a token
lacking ``mcp:tools`` both lists and listens; a missing, invalid or foreign
credential gets the same 401 and challenge from both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User
from django.db import connection

from mcp_gateway import bookkeeping, bus, scopes, tokens
from mcp_gateway.models import Tenant
from tests.http.listening import LIST_CHANGED, Stream, prime
from tests.live.servers import Server
from tests.mcp_gateway.bus.helpers import REDIS_URL, need_redis

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.parametrize("server", ["uvicorn"], indirect=True),
]

SERVER_ENV = {"CACHE_URL": REDIS_URL, "MCP_SSE_KEEPALIVE_SECONDS": "1"}
VERSION = "2025-11-25"


@pytest.fixture(autouse=True)
def shared_bus(settings: Any) -> Iterator[None]:
    if connection.vendor != "postgresql":
        need_redis()
        backend = "django.core.cache.backends.redis.RedisCache"
        settings.CACHES = {"default": {"BACKEND": backend, "LOCATION": REDIS_URL}}
    yield
    bus.close()


@pytest.fixture
def tenant(server: Server) -> Tenant:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    return tenant


def tools_list(server: Server, authorization: str | None) -> httpx2.Response:
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
    }
    if authorization is not None:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return httpx2.post(f"{server.url}/t/acme/mcp", json=body, headers=headers)


def stream_get(server: Server, authorization: str | None) -> httpx2.Response:
    """The GET stream's answer when it refuses (a refusal is not a stream)."""
    headers = {"Accept": "text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    return httpx2.get(f"{server.url}/t/acme/mcp", headers=headers)


def test_a_token_without_mcp_tools_lists_and_listens(server, tenant):
    user = User.objects.create_user("reader")
    secret = tokens.issue(tenant, user, scopes=[scopes.TOOLS_READ]).secret

    listed = tools_list(server, f"Bearer {secret}")
    prime(server, secret)
    with Stream(server, secret, modern=False) as stream:
        bookkeeping.unexpose(tenant, "demo.echo")
        stream.wait_for(LIST_CHANGED, timeout=10)

    assert listed.status_code == 200
    assert "tools" in listed.json()["result"]
    assert stream.status == 200


@pytest.mark.parametrize("credential", ["none", "invalid", "other tenant's"])
def test_a_refused_credential_gets_the_answer_tools_list_gets(
    server, tenant, credential
):
    other = Tenant.objects.create(slug="other", name="Other")
    foreign = tokens.issue(other, User.objects.create_user("bob")).secret
    authorization = {
        "none": None,
        "invalid": "Bearer not-a-token",
        "other tenant's": f"Bearer {foreign}",
    }[credential]

    listed = tools_list(server, authorization)
    streamed = stream_get(server, authorization)

    assert listed.status_code == 401
    assert streamed.status_code == listed.status_code
    assert streamed.headers["WWW-Authenticate"] == listed.headers["WWW-Authenticate"]
    assert "text/event-stream" not in streamed.headers.get("content-type", "")
