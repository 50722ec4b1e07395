"""Usage export: calls per tenant, tool, UTC day and outcome, from the audit log."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from mcp_gateway.audit import usage
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import Tenant


def row(tenant: Tenant | None, slug: str, tool: str, outcome: str, at: datetime):
    return ToolCall(
        tenant=tenant, tenant_slug=slug, tool_name=tool, outcome=outcome, created_at=at
    )


@pytest.fixture
def calls(tenant: Tenant, other_tenant: Tenant) -> list[ToolCall]:
    day1 = datetime(2026, 11, 30, 23, 59, tzinfo=UTC)
    day2 = datetime(2026, 12, 1, 0, 1, tzinfo=UTC)
    made = [
        *(row(tenant, "acme", "demo_echo", "ok", day1) for _ in range(3)),
        row(tenant, "acme", "demo_echo", "tool_error", day1),
        *(row(tenant, "acme", "demo_echo", "ok", day2) for _ in range(2)),
        row(tenant, "acme", "demo_add", "quota", day2),
        row(other_tenant, "globex", "demo_echo", "ok", day2),
        row(None, "gone", "demo_echo", "ok", day2),  # a deleted tenant's row
    ]
    return ToolCall.objects.bulk_create(made)


def test_totals_equal_the_audit_rows_in_one_query(calls, django_assert_num_queries):
    with django_assert_num_queries(1):
        found = usage.rows()

    assert sum(r["calls"] for r in found) == ToolCall.objects.count() == len(calls)
    assert [tuple(r.values()) for r in found] == [
        ("acme", "demo_echo", "2026-11-30", "ok", 3),
        ("acme", "demo_echo", "2026-11-30", "tool_error", 1),
        ("acme", "demo_add", "2026-12-01", "quota", 1),
        ("acme", "demo_echo", "2026-12-01", "ok", 2),
        ("globex", "demo_echo", "2026-12-01", "ok", 1),
        ("gone", "demo_echo", "2026-12-01", "ok", 1),
    ]
    assert list(found[0]) == ["tenant", "tool", "day", "outcome", "calls"]


def test_the_command_filters_by_tenant_and_utc_days(calls, capsys):
    call_command(
        "mcp_usage", "--tenant", "acme", "--since", "2026-12-01", "--format", "json"
    )
    found = json.loads(capsys.readouterr().out)
    call_command("mcp_usage", "--until", "2026-12-01")
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))

    assert sum(r["calls"] for r in found) == 3
    assert {r["day"] for r in found} == {"2026-12-01"}
    assert [r["calls"] for r in table] == ["3", "1"]
    assert list(table[0]) == ["tenant", "tool", "day", "outcome", "calls"]


def test_the_command_refuses_bad_input(calls):
    with pytest.raises(CommandError, match="--since must be a date"):
        call_command("mcp_usage", "--since", "yesterday")
    with pytest.raises(CommandError, match="before --until"):
        call_command("mcp_usage", "--since", "2026-12-02", "--until", "2026-12-01")
    with pytest.raises(CommandError, match="No tenant 'nobody'"):
        call_command("mcp_usage", "--tenant", "nobody")
    call_command("mcp_usage", "--tenant", "gone")  # deleted, still exportable


def test_the_api_serves_the_same_rows(calls, django_assert_num_queries):
    api = APIClient()
    api.force_authenticate(User.objects.create_superuser("root"))

    response = api.get("/api/usage/", {"tenant": "acme", "until": "2026-12-01"})
    bad = api.get("/api/usage/", {"since": "soon"})

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert [r["calls"] for r in body["results"]] == [3, 1]
    assert bad.status_code == 400
    assert "since" in bad.json()["detail"] or "since" in json.dumps(bad.json())


def test_the_export_matches_recorded_calls(client, tenant, token):
    from mcp_gateway import bookkeeping
    from tests.rpc import post_rpc

    bookkeeping.expose(tenant, "demo.echo")
    for _ in range(4):
        post_rpc(client, token, "tools/call", {"name": "demo_echo", "arguments": {}})
    post_rpc(
        client, token, "tools/call", {"name": "demo_echo", "arguments": {"text": "x"}}
    )

    found = usage.rows(tenant="acme")

    assert sum(r["calls"] for r in found) == ToolCall.objects.count() == 5
    assert {(r["outcome"], r["calls"]) for r in found} == {("tool_error", 4), ("ok", 1)}


@pytest.mark.parametrize(
    "value",
    ["soon", "2026-13-45", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00+23:59"],
)
def test_a_bad_moment_is_a_value_error(value):
    with pytest.raises(ValueError, match=re.escape(value)):
        usage.parse_moment(value)


def test_a_naive_time_is_utc():
    assert usage.parse_moment("2026-12-01T10:00") == datetime(
        2026, 12, 1, 10, tzinfo=UTC
    )
