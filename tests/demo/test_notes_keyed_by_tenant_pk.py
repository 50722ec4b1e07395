"""Notes belong to the tenant's row, not to its slug.

A slug can be given up (renamed, or the tenant deleted) and later taken by
another tenant; that tenant must never read or delete the notes its
predecessor saved.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import Membership, Tenant

MODERN = "2026-07-28"

NOTE_TOOLS = ["demo.add_note", "demo.delete_note"]


def _tenant_with_token(slug: str, username: str) -> str:
    tenant = Tenant.objects.create(slug=slug, name=slug.title())
    bookkeeping.expose_many(tenant, NOTE_TOOLS)
    user = User.objects.create_user(username)
    Membership.objects.create(tenant=tenant, user=user)
    return tokens.issue(tenant, user).secret


def _call(
    client: Any, token: str, name: str, arguments: dict[str, Any], slug: str = "acme"
) -> Any:
    """Call a tool on 2026-07-28, where a confirmation can be asked for."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }
    response = client.post(
        f"/t/{slug}/mcp",
        json.dumps(body),
        content_type="application/json",
        headers={
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
        },
    )
    assert response.status_code == 200, response.content
    return response.json()["result"]


def _give_up_slug_by_renaming(tenant: Tenant) -> None:
    tenant.slug = "acme-old"
    tenant.save()


def _give_up_slug_by_deleting(tenant: Tenant) -> None:
    tenant.delete()


@pytest.mark.parametrize(
    "give_up", [_give_up_slug_by_renaming, _give_up_slug_by_deleting]
)
def test_a_tenant_reusing_a_slug_never_reaches_its_predecessors_notes(
    client, db, give_up
):
    first = _tenant_with_token("acme", "alice")
    saved = _call(client, first, "demo_add_note", {"title": "Q3 secret plan"})
    note_id = saved["structuredContent"]["id"]
    give_up(Tenant.objects.get(slug="acme"))

    second = _tenant_with_token("acme", "mallory")
    result = _call(client, second, "demo_delete_note", {"id": note_id})

    assert "Q3 secret plan" not in json.dumps(result)
    assert result["isError"] is True
    assert "no note with this id" in result["content"][0]["text"]


def test_each_tenant_deletes_only_its_own_notes(client, db):
    acme = _tenant_with_token("acme", "alice")
    globex = _tenant_with_token("globex", "bob")
    saved = _call(client, acme, "demo_add_note", {"title": "mine"})

    note_id = saved["structuredContent"]["id"]
    result = _call(client, globex, "demo_delete_note", {"id": note_id}, "globex")

    assert "mine" not in json.dumps(result)
    assert result["isError"] is True
