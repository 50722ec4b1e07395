"""A site served under a path prefix: FORCE_SCRIPT_NAME or SCRIPT_NAME.

Django's test client does not set the script prefix the way a WSGI server
does, so each request here sets it, and passes the raw target (``RAW_URI``)
as gunicorn would: with the prefix when the server was given it
(``SCRIPT_NAME``), without it behind a proxy that strips it
(``FORCE_SCRIPT_NAME``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import set_script_prefix

from mcp_gateway import bookkeeping
from mcp_gateway.checks import check_public_base_url_origin
from mcp_gateway.oauth.resource import metadata_url, resource_url
from tests.mcp_gateway.oauth_fixtures import ISSUER, KID, idp, jwt_server
from tests.oauth_keys import claims, mint
from tests.rpc import VERSION

__all__ = ["idp", "jwt_server"]

PREFIX = "/sub"
BASE = "https://mcp.example"


@pytest.fixture
def prefixed(settings: Any) -> Iterator[None]:
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "PUBLIC_BASE_URL": BASE}
    settings.ALLOWED_HOSTS = ["mcp.example"]
    set_script_prefix(f"{PREFIX}/")
    yield
    set_script_prefix("/")


def post(
    client: Client, raw_uri: str, token: str | None, *, script_name: str = PREFIX
) -> Any:
    """POST tools/list the way gunicorn hands it to Django."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"MCP-Protocol-Version": VERSION, "Host": "mcp.example"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    path_info = raw_uri.removeprefix(PREFIX) if script_name else raw_uri
    return client.generic(
        "POST",
        path_info,
        json.dumps(body),
        content_type="application/json",
        headers=headers,
        SCRIPT_NAME=script_name,
        RAW_URI=raw_uri,
    )


@pytest.mark.parametrize(
    ("raw_uri", "script_name"),
    [
        ("/sub/t/acme/mcp", PREFIX),  # gunicorn --env SCRIPT_NAME=/sub
        ("/t/acme/mcp", ""),  # a proxy stripped /sub; FORCE_SCRIPT_NAME=/sub
    ],
    ids=["SCRIPT_NAME", "FORCE_SCRIPT_NAME"],
)
def test_the_endpoint_answers_under_a_script_prefix(
    client, prefixed, settings, tenant, token, raw_uri, script_name
):
    if not script_name:
        settings.FORCE_SCRIPT_NAME = PREFIX
    bookkeeping.expose_many(tenant, ["demo.echo"])

    response = post(client, raw_uri, token, script_name=script_name)

    assert response.status_code == 200, response.content
    assert [t["name"] for t in response.json()["result"]["tools"]] == ["demo_echo"]


@pytest.mark.parametrize(
    "raw_uri", ["/sub/t/acme/mcp/", "/sub//t/acme/mcp", "/other/t/acme/mcp"]
)
def test_a_non_canonical_target_under_a_prefix_is_still_404(
    client, prefixed, token, raw_uri
):
    assert post(client, raw_uri, token).status_code == 404


def test_resource_and_metadata_urls_carry_the_prefix_once(prefixed, jwt_server):
    assert resource_url("acme") == f"{BASE}/sub/t/acme/mcp"
    assert metadata_url("acme") == (
        f"{BASE}/sub/.well-known/oauth-protected-resource/t/acme/mcp"
    )


def test_the_challenge_links_to_metadata_served_under_the_prefix(
    client, prefixed, jwt_server
):
    challenge = post(client, "/sub/t/acme/mcp", None)
    link = challenge["WWW-Authenticate"].split('resource_metadata="')[1].split('"')[0]
    path = link.removeprefix(BASE)

    document = client.get(
        path.removeprefix(PREFIX), SCRIPT_NAME=PREFIX, headers={"Host": "mcp.example"}
    )

    assert challenge.status_code == 401
    assert path.startswith(f"{PREFIX}/.well-known/oauth-protected-resource/")
    assert document.status_code == 200
    assert document.json()["resource"] == f"{BASE}/sub/t/acme/mcp"
    assert document.json()["authorization_servers"] == [ISSUER]


def test_the_rfc_form_with_the_prefix_in_the_suffix_is_served_too(
    client, prefixed, jwt_server
):
    response = client.get(
        "/.well-known/oauth-protected-resource/sub/t/acme/mcp",
        SCRIPT_NAME=PREFIX,
        headers={"Host": "mcp.example"},
    )

    assert response.status_code == 200
    assert response.json()["resource"] == f"{BASE}/sub/t/acme/mcp"


def test_a_jwt_for_the_prefixed_resource_authenticates(
    client, prefixed, jwt_server, idp, member
):
    token = mint(idp.key, KID, claims(ISSUER, f"{BASE}/sub/t/acme/mcp", "alice"))

    response = post(client, "/sub/t/acme/mcp", token)

    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    "base",
    [
        "https://mcp.example/sub",
        "https://mcp.example/sub/",
        "https://mcp.example?x=1",
        "https://mcp.example#top",
        "https://user@mcp.example",
        "mcp.example",
        "ftp://mcp.example",
        "https://mcp.example:99999",
    ],
)
def test_a_public_base_url_with_more_than_an_origin_is_e011(settings, base):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "PUBLIC_BASE_URL": base}

    assert [e.id for e in check_public_base_url_origin(None)] == ["mcp_gateway.E011"]


@pytest.mark.parametrize(
    "base", ["", "https://mcp.example", "https://mcp.example/", "http://[::1]:8000"]
)
def test_an_origin_or_no_public_base_url_passes(settings, base):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "PUBLIC_BASE_URL": base}

    assert check_public_base_url_origin(None) == []
