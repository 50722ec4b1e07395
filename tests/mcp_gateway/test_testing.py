"""mcp_gateway.testing: the helpers a site's own tests use."""

from __future__ import annotations

import pytest

from mcp_gateway.testing import MCPError, MCPTestClient, make_tenant

pytest_plugins = ["mcp_gateway.testing.fixtures"]


@pytest.fixture
def mcp_tenant(db):
    """The plugin's tenant exposes every engine; the test settings install
    two that collide on one tool name, so this one picks."""
    return make_tenant(engines=["demo.add", "demo.echo"])


@pytest.mark.parametrize("era", ["mcp_client", "mcp_legacy_client"])
def test_the_client_lists_and_calls_a_tool_in_both_eras(request, era):
    client = request.getfixturevalue(era)

    names = [tool["name"] for tool in client.list_tools()]
    result = client.call_tool("demo_add", {"a": 2, "b": 40})

    assert "demo_add" in names
    assert result["structuredContent"] == {"sum": 42}
    assert result.get("isError") is not True


def test_a_tool_failure_is_a_result_not_an_exception(mcp_client):
    result = mcp_client.call_tool("demo_add", {"a": "x"})

    assert result["isError"] is True


def test_a_refused_call_raises_with_the_response(mcp_tenant):
    anonymous = MCPTestClient(mcp_tenant)

    response = anonymous.request("tools/list")
    with pytest.raises(MCPError) as error:
        anonymous.list_tools()

    assert response.status_code == 401
    assert error.value.response.status_code == 401


def test_the_fixtures_make_a_member_with_a_working_token(mcp_tenant, mcp_user):
    assert mcp_tenant.memberships.get().user == mcp_user
    assert mcp_tenant.exposures.filter(engine_id="demo.add").exists()


def test_make_tenant_exposes_only_the_engines_asked_for(db):
    tenant = make_tenant("solo", engines=["demo.echo"])

    assert list(tenant.exposures.values_list("engine_id", flat=True)) == ["demo.echo"]
