"""OAuth against real authorization servers, each in its own process.

- django-oauth-toolkit (its own Django project and SQLite file) issues opaque
  tokens, bound to a mount by RFC 8707 ``resource``; the gateway checks them
  by RFC 7662 introspection.
- A minimal JWT issuer (PyJWT, its own key) serves metadata, a JWKS and a
  token endpoint; a second one, with another key, is trusted by no tenant.

The gateway runs under gunicorn and uvicorn with ``PUBLIC_BASE_URL`` set to
its own address, and is called with the official SDK client and raw HTTP.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_gateway import bookkeeping
from mcp_gateway.models import AuthorizationServer, Exposure, Membership, Tenant
from tests.authserver.processes import (
    JwtIssuer,
    OAuthToolkit,
    jwt_issuer,
    oauth_toolkit,
)
from tests.live.servers import Server, database_url, free_port, running

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = ["demo.echo", "demo.add", "test.probe"]


@dataclass(frozen=True)
class AuthServers:
    toolkit: OAuthToolkit
    issuer: JwtIssuer
    stranger: JwtIssuer


@pytest.fixture(scope="module")
def authservers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthServers]:
    tmp = tmp_path_factory.mktemp("authservers")
    with (
        oauth_toolkit(tmp) as toolkit,
        jwt_issuer(tmp, "issuer") as issuer,
        jwt_issuer(tmp, "stranger") as stranger,
    ):
        yield AuthServers(toolkit, issuer, stranger)


@pytest.fixture(scope="module", params=["gunicorn", "uvicorn"])
def gateway(
    request: pytest.FixtureRequest,
    django_db_setup: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Server]:
    """The gateway, its public base URL being its own loopback address."""
    port = free_port()
    tmp = tmp_path_factory.mktemp(f"oauth-{request.param}")
    db_url = database_url(connection.settings_dict)
    base = f"http://127.0.0.1:{port}"
    with running(
        request.param, db_url, tmp, port=port, MCPGW_TEST_PUBLIC_BASE_URL=base
    ) as live:
        yield live


def mount(gateway: Server, slug: str) -> str:
    return f"{gateway.url}/t/{slug}/mcp"


def trust(tenant: Tenant, servers: AuthServers) -> None:
    AuthorizationServer.objects.create(
        tenant=tenant,
        issuer=servers.toolkit.issuer,
        kind=AuthorizationServer.Kind.INTROSPECTION,
        introspection_endpoint=servers.toolkit.introspection_endpoint,
        client_id=servers.toolkit.gateway[0],
        client_secret=servers.toolkit.gateway[1],
        user_claim="username",
    )
    AuthorizationServer.objects.create(
        tenant=tenant, issuer=servers.issuer.issuer, user_claim="sub"
    )


@pytest.fixture
def tenants(authservers: AuthServers, gateway: Server) -> dict[str, Tenant]:
    """acme (alice; carol in group "ops") and globex (bob), both trusting both."""
    acme = Tenant.objects.create(slug="acme", name="Acme")
    globex = Tenant.objects.create(slug="globex", name="Globex")
    ops = Group.objects.create(name="ops")
    users = {name: User.objects.create_user(name) for name in ("alice", "bob", "carol")}
    users["carol"].groups.add(ops)
    for name, tenant in [("alice", acme), ("carol", acme), ("bob", globex)]:
        Membership.objects.create(tenant=tenant, user=users[name])
    for tenant in (acme, globex):
        trust(tenant, authservers)
        bookkeeping.expose_many(tenant, TOOLS)
    bookkeeping.restrict(Exposure.objects.get(tenant=acme, engine_id="demo.add"), [ops])
    return {"acme": acme, "globex": globex}


Issue = Callable[..., str]


@pytest.fixture(params=["introspection", "jwt"])
def issue(
    request: pytest.FixtureRequest, authservers: AuthServers, gateway: Server, tenants
) -> Issue:
    """Issue a token at the real server for ``user`` and the mount of ``slug``."""
    server = (
        authservers.toolkit if request.param == "introspection" else authservers.issuer
    )

    def issue(user: str, slug: str = "acme", scope: str = "mcp:tools") -> str:
        return server.token(user, mount(gateway, slug), scope)

    issue.kind = request.param  # type: ignore[attr-defined]
    return issue


def post(url: str, token: str, method: str, **params: Any) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
    }
    return httpx2.post(url, content=json.dumps(body), headers=headers, timeout=30)


async def _sdk(url: str, token: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        listed = await client.list_tools()
        echoed = await client.call_tool("demo_echo", {"text": "hi"})
        return {"tools": sorted(t.name for t in listed.tools), "echoed": echoed}


def sdk(url: str, token: str) -> dict[str, Any]:
    return asyncio.run(_sdk(url, token))


def test_a_good_token_lists_and_calls_with_the_sdk_client(gateway, issue):
    session = sdk(mount(gateway, "acme"), issue("alice"))

    assert session["tools"] == ["demo_echo", "test_probe"]
    assert session["echoed"].structured_content == {"text": "hi"}


def test_a_group_member_sees_and_calls_the_restricted_tool(gateway, issue):
    token = issue("carol")
    url = mount(gateway, "acme")

    called = post(url, token, "tools/call", name="demo_add", arguments={"a": 1, "b": 2})

    assert sdk(url, token)["tools"] == ["demo_add", "demo_echo", "test_probe"]
    assert called.json()["result"]["structuredContent"] == {"sum": 3}


def test_list_and_call_agree_for_each_principal(gateway, issue):
    url = mount(gateway, "acme")
    for user, scope in [("alice", "mcp:tools"), ("carol", "mcp:tools:read")]:
        token = issue(user, scope=scope)
        visible = {
            t["name"] for t in post(url, token, "tools/list").json()["result"]["tools"]
        }
        for name in ("demo_add", "demo_echo", "test_probe"):
            response = post(url, token, "tools/call", name=name, arguments={})
            unknown = response.json().get("error", {}).get("code") == -32602
            assert (name in visible) != unknown, (user, name)


def test_the_restricted_tool_is_unknown_to_a_non_member(gateway, issue):
    response = post(
        mount(gateway, "acme"),
        issue("alice"),
        "tools/call",
        name="demo_add",
        arguments={"a": 1, "b": 2},
    )

    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32602


def test_a_token_for_tenant_b_is_refused_at_tenant_a(gateway, issue, tenants):
    Membership.objects.create(
        tenant=tenants["globex"], user=User.objects.get(username="alice")
    )

    response = post(mount(gateway, "acme"), issue("alice", "globex"), "tools/list")

    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_an_expired_token_is_401_invalid_token(gateway, issue, authservers):
    url = mount(gateway, "acme")
    if issue.kind == "jwt":
        token = authservers.issuer.token("alice", url, expires_in=-120)
    else:
        token = issue("alice")
        authservers.toolkit.expire(token)

    response = post(url, token, "tools/list")

    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_a_token_from_an_untrusted_issuer_is_refused(gateway, authservers, tenants):
    url = mount(gateway, "acme")
    token = authservers.stranger.token("alice", url)

    response = post(url, token, "tools/list")

    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_a_read_scoped_token_calling_a_non_read_only_tool_is_403(gateway, issue):
    url = mount(gateway, "acme")
    runs = len(gateway.engine_runs())

    response = post(
        url,
        issue("alice", scope="mcp:tools:read"),
        "tools/call",
        name="test_probe",
        arguments={},
    )

    assert response.status_code == 403
    header = response.headers["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in header
    assert 'scope="mcp:tools"' in header
    metadata = f"{gateway.url}/.well-known/oauth-protected-resource/t/acme/mcp"
    assert f'resource_metadata="{metadata}"' in header
    assert len(gateway.engine_runs()) == runs


def test_the_metadata_resource_is_the_url_the_client_called(
    gateway, authservers, tenants
):
    url = mount(gateway, "acme")
    challenge = httpx2.post(url, content=b"{}", timeout=10)
    metadata_url = (
        challenge.headers["WWW-Authenticate"]
        .split('resource_metadata="')[1]
        .split('"')[0]
    )

    document = httpx2.get(metadata_url, timeout=10).json()

    assert challenge.status_code == 401
    assert document["resource"] == url
    assert document["authorization_servers"] == [
        authservers.toolkit.issuer,
        authservers.issuer.issuer,
    ]
    assert document["bearer_methods_supported"] == ["header"]
