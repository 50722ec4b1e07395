"""Post one JSON-RPC message to a tenant's MCP mount with Django's test client."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

VERSION = "2025-11-25"


def post_rpc(
    client: Client,
    token: str | None,
    method: str,
    params: Any,
    *,
    slug: str = "acme",
    id: Any = 1,
    version: str | None = VERSION,
) -> Any:
    """POST ``method`` with ``params``; a bearer ``token`` and the version
    header when given. Returns the test client's response."""
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    return client.post(
        f"/t/{slug}/mcp",
        json.dumps(body),
        content_type="application/json",
        headers=headers,
    )


def result_of(answer: tuple[int, Any]) -> dict[str, Any]:
    """The JSON-RPC result of a ``(status, body)`` answer, asserted 200."""
    status, body = answer
    assert status == 200, body
    assert "result" in body, body
    result: dict[str, Any] = body["result"]
    return result
