"""The official Python SDK client against the gateway, over real HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import jsonschema
import pytest
from django.contrib.auth.models import User
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import Tenant
from tests.live.servers import Server

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def secret(server: Server) -> str:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.add", "demo.echo", "demo.whoami"])
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


async def _session(url: str, secret: str, mode: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {secret}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        listed = await client.list_tools()
        added = await client.call_tool("demo_add", {"a": 2, "b": 40})
        return {
            "version": client.protocol_version,
            "tools": {tool.name: tool for tool in listed.tools},
            "added": added,
        }


def run(server: Server, secret: str, mode: str, slug: str = "acme") -> dict[str, Any]:
    return asyncio.run(_session(f"{server.url}/t/{slug}/mcp", secret, mode))


@pytest.mark.parametrize(
    ("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
)
def test_the_sdk_client_negotiates_lists_and_calls(server, secret, mode, version):
    session = run(server, secret, mode)

    assert session["version"] == version
    assert sorted(session["tools"]) == ["demo_add", "demo_echo", "demo_whoami"]
    added = session["added"]
    assert added.is_error is not True
    assert added.structured_content == {"sum": 42}
    schema = session["tools"]["demo_add"].output_schema
    jsonschema.validate(added.structured_content, schema)
