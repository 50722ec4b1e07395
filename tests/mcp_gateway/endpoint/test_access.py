"""Groups hide tools from list and call alike; scopes refuse calls with 403."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.catalog import clear_cache
from mcp_gateway.models import ApiToken, Exposure, Tenant
from tests.mcp_gateway.oauth_fixtures import idp, jwt_server
from tests.rpc import post_rpc

__all__ = ["idp", "jwt_server"]

TOOLS = ["demo.echo", "demo.add", "test.probe"]


def post(client: Client, secret: str, method: str, params: dict[str, Any]) -> Any:
    return post_rpc(client, secret, method, params)


def listed(client: Client, secret: str) -> list[str]:
    response = post(client, secret, "tools/list", {})
    return [tool["name"] for tool in response.json()["result"]["tools"]]


def call(client: Client, secret: str, name: str, **arguments: Any) -> Any:
    return post(client, secret, "tools/call", {"name": name, "arguments": arguments})


@pytest.fixture
def staff_group(tenant: Tenant) -> Group:
    group = Group.objects.create(name="staff-tools")
    bookkeeping.expose_many(tenant, TOOLS)
    bookkeeping.restrict(Exposure.objects.get(engine_id="demo.add"), [group])
    return group


def issue(tenant: Tenant, name: str, *groups: Group, scopes=("mcp:tools",)) -> str:
    user = User.objects.create_user(name)
    user.groups.set(groups)
    return tokens.issue(tenant, user, scopes=scopes).secret


def test_a_group_restricted_tool_is_absent_and_unknown_for_non_members(
    client, tenant, staff_group
):
    outsider = issue(tenant, "olga")

    response = call(client, outsider, "demo_add", a=1, b=2)

    assert listed(client, outsider) == ["demo_echo", "test_probe"]
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32602


def test_a_group_member_sees_and_calls_the_restricted_tool(client, tenant, staff_group):
    insider = issue(tenant, "ines", staff_group)

    response = call(client, insider, "demo_add", a=1, b=2)

    assert listed(client, insider) == ["demo_add", "demo_echo", "test_probe"]
    assert response.json()["result"]["structuredContent"] == {"sum": 3}


def test_list_and_call_agree_for_every_principal(client, tenant, staff_group):
    other = Group.objects.create(name="other")
    principals = [
        issue(tenant, "olga"),
        issue(tenant, "ines", staff_group),
        issue(tenant, "otto", other),
        issue(tenant, "rita", staff_group, scopes=("mcp:tools:read",)),
    ]
    names = ["demo_add", "demo_echo", "test_probe"]

    for secret in principals:
        visible = set(listed(client, secret))
        for name in names:
            body = call(client, secret, name, a=1, b=2, text="x").json()
            unknown = body.get("error", {}).get("code") == -32602
            assert (name in visible) != unknown, (secret, name)


def test_restricting_bumps_the_catalog_version_so_every_worker_sees_it(
    tenant, staff_group
):
    before = Tenant.objects.get(pk=tenant.pk).catalog_version
    exposure = Exposure.objects.get(engine_id="demo.add")

    bookkeeping.restrict(exposure, [])

    assert Tenant.objects.get(pk=tenant.pk).catalog_version == before + 1
    assert list(exposure.groups.all()) == []


def test_a_read_scope_calls_read_only_tools(client, tenant):
    bookkeeping.expose_many(tenant, TOOLS)
    reader = issue(tenant, "rita", scopes=("mcp:tools:read",))

    response = call(client, reader, "demo_echo", text="hi")

    assert response.status_code == 200
    assert response.json()["result"]["structuredContent"] == {"text": "hi"}


def test_a_read_scope_calling_another_tool_is_403_insufficient_scope(client, tenant):
    bookkeeping.expose_many(tenant, TOOLS)
    reader = issue(tenant, "rita", scopes=("mcp:tools:read",))

    response = call(client, reader, "test_probe")

    assert response.status_code == 403
    assert response["WWW-Authenticate"] == (
        'Bearer error="insufficient_scope", scope="mcp:tools", '
        'error_description="The access token does not allow this tool call."'
    )
    assert response.json()["id"] == 1
    assert "test_probe" in listed(client, reader)  # scopes never hide


def test_the_403_points_at_the_metadata_when_the_tenant_has_a_server(
    client, tenant, jwt_server, idp, member
):
    bookkeeping.expose_many(tenant, TOOLS)

    response = call(client, idp.token(scope="mcp:tools:read"), "test_probe")

    assert response.status_code == 403
    header = response["WWW-Authenticate"]
    assert header.startswith('Bearer error="insufficient_scope", scope="mcp:tools"')
    assert header.endswith(
        'resource_metadata="http://testserver/.well-known/'
        'oauth-protected-resource/t/acme/mcp"'
    )


def test_an_oauth_token_without_mcp_scopes_may_list_but_not_call(
    client, tenant, jwt_server, idp, member
):
    bookkeeping.expose_many(tenant, TOOLS)
    token = idp.token(scope="openid")

    assert listed(client, token) == ["demo_add", "demo_echo", "test_probe"]
    assert call(client, token, "demo_echo", text="x").status_code == 403


def test_a_hidden_tool_is_unknown_before_any_scope_check(client, tenant, staff_group):
    reader = issue(tenant, "rita", scopes=("mcp:tools:read",))

    response = call(client, reader, "demo_add", a=1, b=2)

    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32602


# Query budget


def warm(secret: str, client: Client) -> None:
    ApiToken.objects.update(last_used_at=timezone.now())
    clear_cache()
    listed(client, secret)


def test_group_names_are_read_only_when_a_tool_is_restricted(
    principal_cache, client, tenant, django_assert_num_queries
):
    bookkeeping.expose_many(tenant, TOOLS)
    secret = issue(tenant, "olga")
    warm(secret, client)

    with django_assert_num_queries(0):
        listed(client, secret)


def test_a_restricted_catalog_costs_one_query_for_the_users_groups(
    principal_cache, client, tenant, staff_group, django_assert_num_queries
):
    secret = issue(tenant, "ines", staff_group)
    warm(secret, client)

    with django_assert_num_queries(1):
        assert "demo_add" in listed(client, secret)


def test_a_warm_oauth_request_costs_two_queries(
    client, tenant, jwt_server, idp, member, django_assert_num_queries
):
    bookkeeping.expose_many(tenant, TOOLS)
    token = idp.token()
    listed(client, token)

    with django_assert_num_queries(2):
        listed(client, token)
