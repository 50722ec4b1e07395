"""Queries per MCP request, pinned exactly (a warm catalog unless said)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.catalog import clear_cache
from mcp_gateway.models import ApiToken, Tenant
from tests.mcp_gateway.oauth_fixtures import idp, jwt_server
from tests.rpc import post_rpc

__all__ = ["idp", "jwt_server"]


@pytest.fixture
def used_token(
    principal_cache: None, tenant: Tenant, issued_token: tokens.IssuedToken
) -> str:
    """A token used a moment ago, so this request does not record use."""
    ApiToken.objects.filter(pk=issued_token.token.pk).update(
        last_used_at=timezone.now()
    )
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    clear_cache()
    return issued_token.secret


def rpc(client: Client, secret: str, method: str, params: dict[str, Any]) -> Any:
    response = post_rpc(client, secret, method, params)
    assert response.status_code == 200, response.content
    return response.json()


CALL: tuple[str, dict[str, Any]] = (
    "tools/call",
    {"name": "demo_echo", "arguments": {"text": "hi"}},
)
LIST: tuple[str, dict[str, Any]] = ("tools/list", {})


@pytest.mark.parametrize(
    ("method", "params", "queries"),
    [(*CALL, 1), (*LIST, 0)],
    ids=["call-only-its-audit-insert", "list-nothing"],
)
def test_a_warm_request_asks_nothing_and_a_call_writes_its_audit_row(
    client, used_token, django_assert_num_queries, method, params, queries
):
    rpc(client, used_token, method, params)  # warms the principal and catalog

    with django_assert_num_queries(queries) as captured:
        body = rpc(client, used_token, method, params)

    assert "result" in body
    if queries == 1:
        assert captured.captured_queries[0]["sql"].startswith("INSERT")


def test_a_cold_process_costs_the_token_query_and_the_catalog_query(
    client, used_token, django_assert_num_queries
):
    with django_assert_num_queries(2):
        rpc(client, used_token, *LIST)


def test_a_change_makes_the_next_request_reread_the_tenant_and_catalog(
    client, tenant, used_token, django_assert_num_queries
):
    rpc(client, used_token, *LIST)
    bookkeeping.unexpose(tenant, "demo.add")

    with django_assert_num_queries(2):
        body = rpc(client, used_token, *LIST)

    assert [tool["name"] for tool in body["result"]["tools"]] == ["demo_echo"]


def test_recording_token_use_is_the_one_extra_write(
    principal_cache, client, issued_token, tenant, django_assert_num_queries
):
    bookkeeping.expose(tenant, "demo.echo")
    ApiToken.objects.filter(pk=issued_token.token.pk).update(last_used_at=None)

    with django_assert_num_queries(3):  # the token, the catalog, the use
        rpc(client, issued_token.secret, *LIST)
    with django_assert_num_queries(0):
        rpc(client, issued_token.secret, *LIST)


@pytest.mark.parametrize(
    ("method", "params", "audit", "queries"),
    [(*LIST, True, 1), (*CALL, False, 1), (*CALL, True, 2)],
    ids=["list-the-token", "call-the-token", "call-the-token-and-its-audit-insert"],
)
def test_with_the_principal_cache_off_a_warm_request_costs_the_token_query(
    client,
    used_token,
    django_assert_num_queries,
    settings,
    method,
    params,
    audit,
    queries,
):
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "PRINCIPAL_CACHE_SECONDS": 0,
        "AUDIT_CALLS": audit,
    }
    rpc(client, used_token, method, params)

    with django_assert_num_queries(queries) as captured:
        rpc(client, used_token, method, params)

    assert "mcp_gateway_apitoken" in captured.captured_queries[0]["sql"]
    if queries == 2:
        assert captured.captured_queries[1]["sql"].startswith("INSERT")


def test_with_the_audit_log_off_a_warm_call_asks_nothing(
    client, used_token, django_assert_num_queries, settings
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_CALLS": False}
    rpc(client, used_token, *CALL)  # warms the catalog

    with django_assert_num_queries(0):
        body = rpc(client, used_token, *CALL)

    assert body["result"]["structuredContent"] == {"text": "hi"}
    assert not ToolCall.objects.exists()


@pytest.mark.parametrize(
    ("method", "params", "queries"),
    [(*CALL, 3), (*LIST, 2)],
    ids=["call-with-its-audit-insert", "list-two"],
)
def test_oauth_costs_one_more_query_for_the_user_and_membership(
    client,
    tenant,
    jwt_server,
    idp,
    member,
    django_assert_num_queries,
    method,
    params,
    queries,
):
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    token = idp.token()
    rpc(client, token, method, params)  # warms the catalog and the JWKS

    with django_assert_num_queries(queries) as captured:
        body = rpc(client, token, method, params)

    assert "result" in body
    server, user = (q["sql"] for q in captured.captured_queries[:2])
    assert "mcp_gateway_authorizationserver" in server
    assert "mcp_gateway_tenant" in server  # the tenant comes with the servers
    assert "auth_user" in user
    assert "mcp_gateway_membership" in user
