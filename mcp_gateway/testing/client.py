"""An in-process MCP client for a site's tests: the real view, both eras.

Each call is one HTTP POST through Django's test client to the tenant's
mount (wherever the site's URLconf puts it), with the headers and the
per-request envelope its protocol version asks for:

- ``2026-07-28`` (the default): ``MCP-Protocol-Version``, ``Mcp-Method``,
  ``Mcp-Name`` and the ``io.modelcontextprotocol/*`` keys in ``_meta``;
- a handshake-era version (``2025-11-25`` …): the version header only; the
  endpoint is stateless, so no ``initialize`` is needed first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.test import Client
from django.urls import reverse

from mcp_gateway.models import Tenant

MODERN_VERSION = "2026-07-28"
HANDSHAKE_VERSION = "2025-11-25"
META_PREFIX = "io.modelcontextprotocol/"


class MCPError(AssertionError):
    """The call did not answer a JSON-RPC result (an HTTP or JSON-RPC error)."""

    def __init__(self, response: MCPResponse) -> None:
        self.response = response
        super().__init__(
            f"MCP call answered HTTP {response.status_code}: {response.text[:500]}"
        )


@dataclass(frozen=True)
class MCPResponse:
    """One answer: the HTTP response and its JSON-RPC body, when it has one."""

    http: Any  # the test client's response

    @property
    def status_code(self) -> int:
        return int(self.http.status_code)

    @property
    def text(self) -> str:
        return str(self.http.content.decode("utf-8", "replace"))

    @property
    def body(self) -> Any:
        return json.loads(self.http.content) if self.http.content else None

    @property
    def result(self) -> Any:
        """The JSON-RPC ``result``; raises :class:`MCPError` without one."""
        body = self.body
        if (
            self.status_code != 200
            or not isinstance(body, dict)
            or "result" not in body
        ):
            raise MCPError(self)
        return body["result"]


class MCPTestClient:
    """Call a tenant's tools through the real endpoint, like ``APIClient``.

    ``tenant`` is a Tenant or its slug; ``token`` a bearer token (an API
    token's secret or an OAuth access token), or None to call without one.
    ``protocol_version`` picks the era. ``client`` is a Django test client
    to share (cookies, ``defaults``); a new one by default.
    """

    def __init__(
        self,
        tenant: Tenant | str,
        token: str | None = None,
        *,
        protocol_version: str = MODERN_VERSION,
        client: Client | None = None,
        client_info: dict[str, str] | None = None,
        capabilities: dict[str, Any] | None = None,
    ) -> None:
        self.slug = tenant if isinstance(tenant, str) else tenant.slug
        self.token = token
        self.protocol_version = protocol_version
        self.client = client or Client()
        self.client_info = client_info or {"name": "mcp-gateway-tests", "version": "1"}
        self.capabilities = capabilities or {}
        self._next_id = 0

    @property
    def path(self) -> str:
        """The mount's path, as the site's URLconf reverses it."""
        return reverse("mcp_gateway:endpoint", kwargs={"slug": self.slug})

    def request(
        self, method: str, params: dict[str, Any] | None = None, **headers: str
    ) -> MCPResponse:
        """POST one JSON-RPC request; any status is returned, never raised."""
        self._next_id += 1
        params = dict(params or {})
        sent = self._headers(method, params)
        if self.protocol_version == MODERN_VERSION:
            params["_meta"] = {**params.get("_meta", {}), **self._envelope()}
        message = {
            "jsonrpc": "2.0",
            "id": self._next_id,
            "method": method,
            "params": params,
        }
        response = self.client.post(
            self.path,
            json.dumps(message),
            content_type="application/json",
            headers={**sent, **headers},
        )
        return MCPResponse(response)

    def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the tenant lists to this caller, across pages."""
        tools: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        while True:
            result = self.request("tools/list", params).result
            tools.extend(result.get("tools", []))
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
            params = {"cursor": cursor}

    def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Call a tool; its ``CallToolResult`` (``isError`` true on failure)."""
        params = {"name": name, "arguments": arguments or {}}
        result: dict[str, Any] = self.request("tools/call", params).result
        return result

    def _headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": self.protocol_version,
        }
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.protocol_version == MODERN_VERSION:
            headers["Mcp-Method"] = method
            if method == "tools/call":
                headers["Mcp-Name"] = str(params.get("name", ""))
        return headers

    def _envelope(self) -> dict[str, Any]:
        return {
            f"{META_PREFIX}protocolVersion": self.protocol_version,
            f"{META_PREFIX}clientInfo": self.client_info,
            f"{META_PREFIX}clientCapabilities": self.capabilities,
        }
