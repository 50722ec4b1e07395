"""The tenant page's chart of calls per tool over the last 24 hours."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from mcp_gateway import bookkeeping
from mcp_gateway.admin.calls_chart import calls_per_tool
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.catalog import clear_cache
from mcp_gateway.models import Tenant
from tests.rpc import post_rpc


@pytest.fixture
def admin_client(client: Client, staff: User) -> Client:
    # The API-token backend comes first and never loads session users.
    client.force_login(staff, backend="django.contrib.auth.backends.ModelBackend")
    return client


def call(client: Client, secret: str, tool: str, arguments: Any) -> None:
    params = {"name": tool, "arguments": arguments}
    response = post_rpc(client, secret, "tools/call", params)
    assert response.status_code == 200, response.content


@pytest.fixture
def calls(tenant: Tenant, token: str) -> None:
    """Three calls of ``demo_echo`` and one of ``demo_add``, just now."""
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    clear_cache()
    mcp = Client()
    for text in ("a", "b", "c"):
        call(mcp, token, "demo_echo", {"text": text})
    call(mcp, token, "demo_add", {"a": 1, "b": 2})


def chart_of(admin_client: Client, tenant: Tenant) -> str:
    url = reverse("admin:mcp_gateway_tenant_change", args=[tenant.pk])
    response = admin_client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    start = html.index("Calls per tool, last 24 hours")
    return html[start : html.index("</table>", start)]


def test_the_tenant_page_charts_each_tool_with_its_count(admin_client, tenant, calls):
    chart = chart_of(admin_client, tenant)

    assert ">demo_echo</a></th>" in chart
    assert 'max="3" value="3"' in chart
    assert "<td>3</td>" in chart
    assert ">demo_add</a></th>" in chart
    assert 'max="3" value="1"' in chart
    assert "<td>1</td>" in chart
    assert chart.index("demo_echo") < chart.index("demo_add")
    assert "style=" not in chart  # a strict CSP blocks inline styles


def test_each_bar_links_to_the_tools_calls_in_the_audit_log(
    admin_client, tenant, calls
):
    chart = chart_of(admin_client, tenant)
    [link] = re.findall(r'<a href="([^"]+)">demo_add</a>', chart)

    listing = admin_client.get(unescape(link))

    assert listing.status_code == 200
    rows = listing.context["cl"].result_list
    assert [(r.tool_name, r.tenant_id) for r in rows] == [("demo_add", tenant.pk)]


def test_calls_of_unknown_tools_are_not_charted(tenant, calls, token):
    # Before: a call of "nope" got a bar of its own.
    call(Client(), token, "nope", {})

    assert ToolCall.objects.filter(tool_name="nope").exists()
    assert calls_per_tool(tenant) == [("demo_echo", 3), ("demo_add", 1)]


def test_calls_older_than_a_day_or_of_other_tenants_are_left_out(
    tenant, other_tenant, calls
):
    ToolCall.objects.filter(tool_name="demo_add").update(
        created_at=timezone.now() - timedelta(hours=25)
    )
    ToolCall.objects.create(
        tenant=other_tenant, tenant_slug="globex", tool_name="demo_echo", outcome="ok"
    )

    assert calls_per_tool(tenant) == [("demo_echo", 3)]


def test_counting_takes_one_query(tenant, calls):
    with CaptureQueriesContext(connection) as captured:
        calls_per_tool(tenant)

    assert len(captured) == 1


def test_with_no_calls_the_page_says_so(admin_client, tenant):
    url = reverse("admin:mcp_gateway_tenant_change", args=[tenant.pk])

    response = admin_client.get(url)

    assert "No tool calls in the last 24 hours." in response.content.decode()


def test_the_add_page_has_no_chart(admin_client):
    response = admin_client.get(reverse("admin:mcp_gateway_tenant_add"))

    assert response.status_code == 200
    assert "No tool calls" not in response.content.decode()
