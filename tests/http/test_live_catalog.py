"""Live catalog: a listening client learns of a catalog change at once.

A live uvicorn (ASGI) serves the change streams; the changes are made in
this test process (its ORM and its bus) or by a ``manage.py`` subprocess,
so every notification crosses processes: over PostgreSQL LISTEN/NOTIFY
when the tests run on PostgreSQL, over Redis pub/sub on SQLite.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from mcp_gateway import bookkeeping, bus, tokens
from mcp_gateway.endpoint import fanout
from mcp_gateway.models import ApiToken, Tenant
from tests.http.listening import (
    LIST_CHANGED,
    Stream,
    listen_body,
    modern_headers,
    prime,
)
from tests.live.servers import ROOT, Server, database_url
from tests.mcp_gateway.bus.helpers import REDIS_URL, need_redis

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_ENV = {
    "CACHE_URL": REDIS_URL,
    "MCP_SSE_KEEPALIVE_SECONDS": "1",
    "MCP_MAX_LISTENERS_PER_TENANT": "3",
    "MCP_MAX_LISTENERS_PER_PROCESS": "5",
}
TOOLS = ["demo.echo", "demo.add"]
WITHIN_SECONDS = 1.0
"""The issue's bound from a committed change to the notification."""
ENDED_SECONDS = 5.0
"""A stream ends within one keep-alive (1 s here); generous for a busy CI."""
ACK = "notifications/subscriptions/acknowledged"


@pytest.fixture(autouse=True)
def shared_bus(settings: Any) -> Iterator[None]:
    """This process publishes where the server listens: PostgreSQL's own
    NOTIFY, or Redis on SQLite (the in-process bus reaches no other)."""
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


@pytest.fixture
def tenant(server: Server) -> Tenant:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, TOOLS)
    return tenant


@pytest.fixture
def other(server: Server) -> Tenant:
    other = Tenant.objects.create(slug="other", name="Other")
    bookkeeping.expose_many(other, TOOLS)
    return other


@pytest.fixture
def alice(tenant: Tenant) -> str:
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


def era(request: pytest.FixtureRequest) -> bool:
    return bool(request.param == "2026-07-28")


@pytest.fixture(params=["2025-11-25", "2026-07-28"])
def modern(request: pytest.FixtureRequest) -> bool:
    return era(request)


def unexpose_elsewhere(slug: str, engine: str) -> None:
    """``manage.py mcp_unexpose`` in another process, on the same services."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": database_url(connection.settings_dict),
        "CACHE_URL": REDIS_URL,
    }
    command = [sys.executable, "manage.py", "mcp_unexpose", slug, engine]
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_a_change_in_this_process_reaches_the_listener_within_a_second(
    server, tenant, alice, modern
):
    prime(server, alice)
    with Stream(server, alice, modern=modern) as stream:
        assert stream.status == 200
        if modern:
            stream.wait_for(ACK)
        committed = time.monotonic()
        bookkeeping.unexpose(tenant, "demo.echo")
        arrived = stream.wait_for(LIST_CHANGED, timeout=WITHIN_SECONDS + 2)

    assert arrived - committed < WITHIN_SECONDS
    (notification,) = stream.messages(LIST_CHANGED)
    assert "tools" not in notification.get("params", {})  # no catalog content


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_a_management_command_elsewhere_notifies_the_listener(
    server, tenant, alice, modern
):
    prime(server, alice)
    with Stream(server, alice, modern=modern) as stream:
        unexpose_elsewhere("acme", "demo.add")
        stream.wait_for(LIST_CHANGED, timeout=WITHIN_SECONDS + 2)


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_listen_acknowledges_first_and_tags_every_frame(server, tenant, alice):
    prime(server, alice)
    with Stream(server, alice, modern=True) as stream:
        stream.wait_for(ACK)
        bookkeeping.unexpose(tenant, "demo.echo")
        stream.wait_for(LIST_CHANGED)

    first, *rest = stream.messages()
    assert first["method"] == ACK
    assert first["params"]["notifications"] == {"toolsListChanged": True}
    for message in (first, *rest):
        meta = message["params"]["_meta"]
        assert meta["io.modelcontextprotocol/subscriptionId"] == "sub-1"


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_listen_without_tools_in_the_filter_hears_no_tool_change(server, tenant, alice):
    headers = modern_headers(alice, "subscriptions/listen")
    body = listen_body(promptsListChanged=True)
    url = f"{server.url}/t/acme/mcp"
    prime(server, alice)
    with (
        httpx2.Client(timeout=10) as client,
        client.stream("POST", url, json=body, headers=headers) as response,
    ):
        lines = response.iter_lines()
        assert "notifications/subscriptions/acknowledged" in _next_data(lines)
        bookkeeping.unexpose(tenant, "demo.echo")
        # Keep-alives only (1 s apart), no list_changed, for three seconds.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            line = next(lines)
            assert LIST_CHANGED not in line


def _next_data(lines: Iterator[str]) -> str:
    for line in lines:
        if line.startswith("data:"):
            return line
    raise AssertionError("the stream ended")


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_another_tenants_change_sends_nothing(server, tenant, other, alice, modern):
    prime(server, alice)
    with Stream(server, alice, modern=modern) as stream:
        bookkeeping.unexpose(other, "demo.echo")
        time.sleep(2)
        bookkeeping.unexpose(tenant, "demo.echo")
        stream.wait_for(LIST_CHANGED)

    assert len(stream.messages(LIST_CHANGED)) == 1


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_a_burst_of_changes_is_coalesced(server, tenant, alice, modern):
    prime(server, alice)
    with Stream(server, alice, modern=modern) as stream:
        started = time.monotonic()
        for _ in range(50):  # 100 changes
            bookkeeping.unexpose(tenant, "demo.echo")
            bookkeeping.expose(tenant, "demo.echo")
        burst = time.monotonic() - started
        stream.wait_for(LIST_CHANGED)
        time.sleep(1.5)

    # One per COALESCE_SECONDS while the burst lasts (about a second when
    # idle, longer on a loaded machine), one before and one after it.
    most = 2 + math.ceil(burst / fanout.COALESCE_SECONDS)
    assert 1 <= len(stream.messages(LIST_CHANGED)) <= min(most, 99)


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
@pytest.mark.parametrize(
    "end",
    ["revoke", "deactivate", "leave", "disable"],
)
def test_the_stream_ends_when_its_principal_goes(server, tenant, alice, modern, end):
    prime(server, alice)
    with Stream(server, alice, modern=modern) as stream:
        user = User.objects.get(username="alice")
        if end == "revoke":
            tokens.revoke(alice)
        elif end == "deactivate":
            user.is_active = False
            user.save()
        elif end == "leave":
            tenant.memberships.filter(user=user).delete()
        else:
            tenant.is_active = False
            tenant.save()
        assert stream.ended.wait(ENDED_SECONDS), "the stream outlived its principal"


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_the_stream_ends_within_a_keepalive_when_its_token_expires(
    server, tenant, alice, modern
):
    with Stream(server, alice, modern=modern) as stream:
        # An expiry publishes nothing: only the keep-alive's re-check sees it.
        ApiToken.objects.update(expires_at=timezone.now())
        assert stream.ended.wait(ENDED_SECONDS), "the stream outlived its token"


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_the_caps_answer_429_naming_the_cap(server, tenant, other, alice):
    bob = tokens.issue(other, User.objects.create_user("bob")).secret
    streams = [Stream(server, alice, modern=False) for _ in range(3)]
    with streams[0], streams[1], streams[2]:
        with Stream(server, alice, modern=True) as refused:
            assert refused.status == 429
            assert b"MAX_LISTENERS_PER_TENANT" in refused.body
        others = [Stream(server, bob, modern=False, slug="other") for _ in range(2)]
        with (
            others[0],
            others[1],
            Stream(server, bob, modern=False, slug="other") as refused,
        ):
            assert refused.status == 429
            assert b"MAX_LISTENERS_PER_PROCESS" in refused.body
