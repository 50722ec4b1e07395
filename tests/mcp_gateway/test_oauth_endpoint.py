"""The endpoint with OAuth: challenges, discovery, 503, and login signals."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.signals import user_login_failed
from django.test import Client

from mcp_gateway import bookkeeping
from mcp_gateway.models import Tenant
from mcp_gateway.oauth.checks import check_public_base_url
from tests.mcp_gateway.oauth_fixtures import idp, jwt_server
from tests.rpc import post_rpc

__all__ = ["idp", "jwt_server"]

METADATA = "http://testserver/.well-known/oauth-protected-resource/t/acme/mcp"
WELL_KNOWN = "/.well-known/oauth-protected-resource/t/acme/mcp"


def post(client: Client, token: str | None, method: str = "tools/list", **params: Any):
    return post_rpc(client, token, method, params, id=7)


def test_a_missing_credential_challenge_points_at_the_metadata(client, jwt_server):
    response = post(client, None)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == (
        f'Bearer realm="mcp", resource_metadata="{METADATA}", scope="mcp:tools"'
    )


def test_a_bad_token_challenge_says_invalid_token_and_points_at_the_metadata(
    client, jwt_server, idp
):
    response = post(client, "not-a-token")

    header = response["WWW-Authenticate"]
    assert response.status_code == 401
    assert 'error="invalid_token"' in header
    assert f'resource_metadata="{METADATA}"' in header
    assert 'scope="mcp:tools"' in header


def test_a_mount_without_an_authorization_server_has_no_metadata_in_challenges(
    client, tenant
):
    response = post(client, None)

    assert response["WWW-Authenticate"] == 'Bearer realm="mcp"'


def test_claims_never_reach_the_challenge(client, jwt_server, idp, member):
    token = idp.token(sub='alice"\r\nX-Injected: 1', scope='x" y')

    response = post(client, token)

    assert response.status_code == 401
    assert "Injected" not in response["WWW-Authenticate"]


def test_a_jwt_lists_and_calls_tools(client, tenant, jwt_server, idp, member):
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.whoami"])

    listed = post(client, idp.token())
    called = post(client, idp.token(), "tools/call", name="demo_whoami", arguments={})

    assert [t["name"] for t in listed.json()["result"]["tools"]] == [
        "demo_echo",
        "demo_whoami",
    ]
    result = called.json()["result"]
    assert result["structuredContent"]["user"] == "alice"
    assert result["structuredContent"]["scopes"] == ["mcp:tools"]


def test_an_unreachable_issuer_is_503_and_runs_nothing(
    client, tenant, jwt_server, idp, member
):
    bookkeeping.expose(tenant, "test.probe")
    idp.down = True

    response = post(client, idp.token(), "tools/call", name="test_probe", arguments={})

    assert response.status_code == 503
    assert response.json()["error"]["code"] == -32000


def test_every_failed_authentication_fires_user_login_failed(
    client, jwt_server, idp, member
):
    seen: list[dict[str, Any]] = []

    def record(sender: Any, credentials: dict[str, Any], **kwargs: Any) -> None:
        seen.append(credentials)

    user_login_failed.connect(record)
    try:
        post(client, idp.token(aud="http://testserver/t/globex/mcp"))
        post(client, "mcpgw_nope_nope")
    finally:
        user_login_failed.disconnect(record)

    assert len(seen) == 2
    assert all(c["bearer_token"] == "********************" for c in seen)


# RFC 9728 metadata


def test_the_metadata_document_names_the_resource_and_its_servers(client, jwt_server):
    response = client.get(WELL_KNOWN)

    assert response.status_code == 200
    assert response.json() == {
        "resource": "http://testserver/t/acme/mcp",
        "authorization_servers": ["https://idp.example"],
        "scopes_supported": ["mcp:tools", "mcp:tools:read"],
        "bearer_methods_supported": ["header"],
    }
    assert "max-age" in response["Cache-Control"]


def test_the_metadata_resource_follows_the_public_base_url(
    client, jwt_server, settings
):
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "PUBLIC_BASE_URL": "https://mcp.example/",
    }

    response = client.get(WELL_KNOWN)

    assert response.json()["resource"] == "https://mcp.example/t/acme/mcp"


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource/t/nope/mcp",
        "/.well-known/oauth-protected-resource/t/acme/mcp/",
        "/.well-known/oauth-protected-resource/t/acme",
        "/.well-known/oauth-protected-resource/admin/",
        "/.well-known/oauth-protected-resource/t/globex/mcp",
    ],
    ids=["unknown", "trailing-slash", "not-a-mount", "other-view", "no-server"],
)
def test_no_metadata_where_there_is_no_protected_mount(
    client, jwt_server, other_tenant, path
):
    assert client.get(path).status_code == 404


def test_a_disabled_tenant_has_no_metadata(client, jwt_server, tenant):
    Tenant.objects.filter(pk=tenant.pk).update(is_active=False)

    assert client.get(WELL_KNOWN).status_code == 404


def test_the_metadata_is_read_only(client, jwt_server):
    assert client.post(WELL_KNOWN).status_code == 405


# System check


def test_the_oauth_backend_needs_an_absolute_public_base_url(settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "PUBLIC_BASE_URL": ""}

    errors = check_public_base_url(None)

    assert [error.id for error in errors] == ["mcp_gateway.E010"]


def test_an_absolute_public_base_url_passes_the_check():
    assert check_public_base_url(None) == []
