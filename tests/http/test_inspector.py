"""The MCP Inspector CLI lists and calls tools with a bearer token."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import Tenant
from tests.live.node import CLIENTS, run_node
from tests.live.servers import Server

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def inspector_secret(server: Server) -> str:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.add", "demo.echo"])
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


def inspect(server: Server, secret: str, *args: str) -> dict[str, Any]:
    inspector = CLIENTS / "node_modules" / ".bin" / "mcp-inspector-cli"
    command = [
        str(inspector),
        "--cli",
        f"{server.url}/t/acme/mcp",
        "--transport",
        "http",
    ]
    command += ["--header", f"Authorization: Bearer {secret}", *args]
    result = run_node(command, cwd=CLIENTS / "node_modules", timeout=60)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return dict(json.loads(result.stdout))


def test_the_inspector_lists_and_calls_a_tool(server, inspector_secret):
    listed = inspect(server, inspector_secret, "--method", "tools/list")
    called = inspect(
        server,
        inspector_secret,
        "--method",
        "tools/call",
        "--tool-name",
        "demo_echo",
        "--tool-arg",
        "text=hello",
    )

    assert sorted(tool["name"] for tool in listed["tools"]) == ["demo_add", "demo_echo"]
    assert called["structuredContent"] == {"text": "hello"}
