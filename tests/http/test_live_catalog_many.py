"""Live catalog: more streams opening at once than the server has database
connections (psycopg's pool under ASGI holds 4 per process on PostgreSQL).

A stream checks its credential on the loop's shared threads; a thread that
kept its connection afterwards would hold it from the pool, and the next
thread's check would wait for the pool's timeout (30 s), then fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from mcp_gateway import bookkeeping, bus, tokens
from mcp_gateway.models import Tenant
from tests.http.listening import LIST_CHANGED, Stream, prime
from tests.live.servers import Server
from tests.mcp_gateway.bus.helpers import REDIS_URL, need_redis

pytestmark = pytest.mark.django_db(transaction=True)

STREAMS = 16
"""Over the pool's 4 connections and the loop's default threads (6 here)."""
SERVER_ENV = {
    "CACHE_URL": REDIS_URL,
    "MCP_MAX_LISTENERS_PER_TENANT": str(STREAMS + 1),  # the primer may linger
}


@pytest.fixture(autouse=True)
def shared_bus(settings: Any) -> Iterator[None]:
    if connection.vendor != "postgresql":
        need_redis()
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": REDIS_URL,
            }
        }
    yield
    bus.close()


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_streams_opened_at_once_all_answer_and_hear_a_change(server: Server) -> None:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    secret = tokens.issue(tenant, User.objects.create_user("alice")).secret
    prime(server, secret)  # the bus listens: each list_changed is the change's
    streams = [Stream(server, secret, modern=i % 2 == 0) for i in range(STREAMS)]
    try:
        with ThreadPoolExecutor(STREAMS) as pool:
            opened = list(pool.map(Stream.__enter__, streams))
        assert [s.status for s in opened] == [200] * STREAMS
        bookkeeping.unexpose(tenant, "demo.add")
        for stream in opened:
            stream.wait_for(LIST_CHANGED, timeout=10)
    finally:
        for stream in streams:
            stream.__exit__(None, None, None)
