"""Quotas under concurrency: PostgreSQL, Redis, a threaded live server.

Many calls arrive together at the boundary of a tenant's quota; exactly the
quota runs, every other call is refused 429, and the audit log agrees.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.contrib.auth.models import User
from django.core.cache import caches
from django.db import connection

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.limits import quotas
from mcp_gateway.models import Tenant
from tests.services import redis_running

REDIS = {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": "redis://127.0.0.1:6379/9",
    "KEY_PREFIX": "quota-concurrency",
}
QUOTA = 10
CALLS = 40


pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="runs on PostgreSQL (DATABASE_URL=postgres://…)",
    ),
    pytest.mark.skipif(not redis_running(), reason="needs Redis on 6379"),
]


@pytest.fixture
def redis_cache(settings):
    settings.CACHES = {**settings.CACHES, "default": REDIS}
    caches["default"].clear()
    yield caches["default"]
    caches["default"].clear()


@pytest.mark.parametrize("scope", ["tenant", "token"])
def test_concurrent_calls_at_the_boundary_admit_exactly_the_quota(
    live_server, redis_cache, scope
):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    field = "calls_per_day" if scope == "tenant" else "token_calls_per_day"
    Tenant.objects.filter(pk=tenant.pk).update(**{field: QUOTA})
    bookkeeping.expose(tenant, "demo.echo")
    secret = tokens.issue(tenant, User.objects.create_user("alice")).secret
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "demo_echo", "arguments": {"text": "x"}},
        }
    )
    headers = {
        "Authorization": f"Bearer {secret}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }

    def call(_: int) -> int:
        url = f"{live_server.url}/t/acme/mcp"
        return requests.post(url, data=body, headers=headers, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=CALLS) as pool:
        statuses = list(pool.map(call, range(CALLS)))

    tenant.refresh_from_db()
    assert sorted(statuses) == [200] * QUOTA + [429] * (CALLS - QUOTA)
    audited = list(ToolCall.objects.values_list("outcome", flat=True))
    assert sorted(audited) == ["ok"] * QUOTA + ["quota"] * (CALLS - QUOTA)
    if scope == "tenant":
        assert quotas.usage(tenant)[0].used == QUOTA
