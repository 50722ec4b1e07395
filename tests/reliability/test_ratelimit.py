"""Rate limits per tenant and per token, counted in the local-memory cache."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.core.cache import caches
from django.test import Client

from engines_app.context import Principal
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.limits import ratelimit
from mcp_gateway.models import Tenant
from tests.rpc import post_rpc

UNREACHABLE_REDIS = {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": "redis://127.0.0.1:1/0",
    "OPTIONS": {"socket_connect_timeout": 0.2},
}


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    caches["default"].clear()


def call(client: Client, secret: str, id: Any = 1) -> Any:
    params = {"name": "demo_echo", "arguments": {"text": "hi"}}
    return post_rpc(client, secret, "tools/call", params, id=id, version=None)


@pytest.fixture
def limited(tenant: Tenant, issued_token: tokens.IssuedToken) -> Tenant:
    bookkeeping.expose(tenant, "demo.echo")
    Tenant.objects.filter(pk=tenant.pk).update(calls_per_minute=60, burst=2)
    return tenant


def test_unlimited_by_default(client, tenant, token):
    bookkeeping.expose(tenant, "demo.echo")

    statuses = {call(client, token).status_code for _ in range(20)}

    assert statuses == {200}


def test_over_the_tenant_limit_is_429_with_retry_after_and_the_id(
    client, limited, token
):
    first = [call(client, token).status_code for _ in range(2)]

    refused = call(client, token, id="x-1")

    assert first == [200, 200]
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 2
    body = refused.json()
    assert body["id"] == "x-1"
    assert body["error"]["code"] == -32000
    assert (
        list(ToolCall.objects.values_list("outcome", flat=True)).count("rate_limited")
        == 1
    )


def test_the_token_limit_counts_each_token_apart(client, tenant, member, token):
    bookkeeping.expose(tenant, "demo.echo")
    Tenant.objects.filter(pk=tenant.pk).update(token_calls_per_minute=1)
    other = tokens.issue(tenant, member).secret

    assert call(client, token).status_code == 200
    assert call(client, token).status_code == 429
    assert call(client, other).status_code == 200


def test_tools_list_is_not_counted(client, limited, token):
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for _ in range(5):
        client.post(
            "/t/acme/mcp",
            json.dumps(listing),
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )

    assert call(client, token).status_code == 200


def test_a_window_admits_burst_calls_and_refuses_the_next():
    limit = ratelimit.Limit(per_minute=6, burst=3)  # a 30 s window
    key = "test:window"

    counts = [ratelimit._hit(key, limit, 1000.0) for _ in range(4)]

    assert counts[:3] == [0, 0, 0]
    assert counts[3] == 20  # the window 990..1020 ends in 20 s
    assert ratelimit._hit(key, limit, 1021.0) == 0


def test_a_cache_outage_fails_open_and_logs_once(settings, tenant, caplog):
    settings.CACHES = {**settings.CACHES, "default": UNREACHABLE_REDIS}
    Tenant.objects.filter(pk=tenant.pk).update(calls_per_minute=1)
    tenant.refresh_from_db()
    ratelimit._warned["at"] = float("-inf")
    alice = Principal(tenant="acme", user="alice")

    with caplog.at_level(logging.ERROR, logger="mcp_gateway"):
        verdicts = [ratelimit.check(tenant, alice) for _ in range(3)]

    assert all(v.allowed for v in verdicts)
    assert caplog.text.count("Rate-limit cache unavailable") == 1


def test_a_cache_outage_is_a_503_when_failing_closed(client, settings, limited, token):
    settings.CACHES = {**settings.CACHES, "default": UNREACHABLE_REDIS}
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "RATE_LIMIT_FAIL_OPEN": False}

    response = call(client, token, id=5)

    assert response.status_code == 503
    assert response.json()["id"] == 5
    assert response.json()["error"]["code"] == -32000
