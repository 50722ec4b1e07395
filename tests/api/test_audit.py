"""``GET /api/audit/``: tool calls made over MCP, filtered and paged."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.catalog import clear_cache
from mcp_gateway.models import Tenant
from tests.rpc import post_rpc


def call(client: Client, tenant: Tenant, secret: str, tool: str, arguments: Any):
    params = {"name": tool, "arguments": arguments}
    response = post_rpc(client, secret, "tools/call", params, slug=tenant.slug)
    assert response.status_code == 200, response.content


@pytest.fixture
def calls(client, tenant, other_tenant, member, token) -> None:
    """Three calls to acme (echo ok, echo failing, add ok), one to globex."""
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    bookkeeping.expose_many(other_tenant, ["demo.echo"])
    clear_cache()
    other_token = tokens.issue(other_tenant, member).secret
    call(client, tenant, token, "demo_echo", {"text": "hi"})
    call(client, tenant, token, "demo_echo", {"text": 3})
    call(client, tenant, token, "demo_add", {"a": 1, "b": 2})
    call(client, other_tenant, other_token, "demo_echo", {"text": "hi"})


def listed(api: APIClient, **params: str) -> list[dict[str, Any]]:
    response = api.get("/api/audit/", params)
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def test_calls_made_over_mcp_are_listed_newest_first(api, calls):
    rows = listed(api)

    assert [(row["tenant"], row["tool_name"]) for row in rows] == [
        ("globex", "demo_echo"),
        ("acme", "demo_add"),
        ("acme", "demo_echo"),
        ("acme", "demo_echo"),
    ]
    assert rows[1]["user"] == "alice"
    assert rows[1]["engine_id"] == "demo.add"


def test_the_list_is_paginated(api, calls):
    response = api.get("/api/audit/", {"page_size": 3, "page": 2})

    body = response.json()
    assert body["count"] == 4
    assert len(body["results"]) == 1
    assert body["previous"] is not None


def test_filter_by_tenant_slug(api, calls):
    rows = listed(api, tenant="globex")

    assert [row["tenant"] for row in rows] == ["globex"]


def test_filter_by_tool_name(api, calls):
    rows = listed(api, tool="demo_add")

    assert [(row["tenant"], row["tool_name"]) for row in rows] == [("acme", "demo_add")]


def test_filter_by_outcome(api, calls):
    failed = listed(api, outcome="tool_error")
    ok = listed(api, outcome="ok", tenant="acme")

    assert [row["tool_name"] for row in failed] == ["demo_echo"]
    assert [row["tool_name"] for row in ok] == ["demo_add", "demo_echo"]


def test_filter_by_the_busy_outcome(api, calls):
    ToolCall.objects.filter(tool_name="demo_add").update(outcome="busy")

    rows = listed(api, outcome="busy")

    assert [row["tool_name"] for row in rows] == ["demo_add"]
    assert "busy" in api.get("/api/schema/").content.decode()


def test_filter_by_time_since_and_until(api, calls):
    day_ago = timezone.now() - timedelta(days=1)
    ToolCall.objects.filter(tool_name="demo_add").update(created_at=day_ago)
    hour_ago = (timezone.now() - timedelta(hours=1)).isoformat()

    recent = listed(api, since=hour_ago)
    older = listed(api, until=hour_ago)

    assert "demo_add" not in [row["tool_name"] for row in recent]
    assert len(recent) == 3
    assert [row["tool_name"] for row in older] == ["demo_add"]


def test_a_time_without_offset_is_read_as_local_time(api, calls):
    in_an_hour = (timezone.localtime() + timedelta(hours=1)).replace(tzinfo=None)

    assert listed(api, since=in_an_hour.isoformat()) == []
    assert len(listed(api, until=in_an_hour.isoformat())) == 4


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01T00:00:00Z", ""])
def test_a_malformed_time_is_400_in_the_error_shape(api, db, value):
    response = api.get("/api/audit/", {"since": value})

    body = response.json()
    assert response.status_code == 400
    assert body["code"] == "invalid"
    assert body["detail"].startswith("since: Must be an ISO 8601 date and time")


def test_an_unknown_outcome_is_400(api, db):
    response = api.get("/api/audit/", {"outcome": "exploded"})

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_non_staff_is_403(db):
    client = APIClient()
    client.force_authenticate(User.objects.create_user("bob"))

    response = client.get("/api/audit/")

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"


def test_the_audit_log_is_read_only(api, db):
    response = api.post("/api/audit/", {}, format="json")

    assert response.status_code == 405
