"""Helpers for a site's own tests, the way DRF ships ``APIClient``.

- :class:`MCPTestClient`: an in-process MCP client that calls a tenant's
  mount through the real view (Django's test client, the site's URLconf,
  middleware and auth backends), in either protocol era;
- :func:`make_tenant`, :func:`make_member`, :func:`issue_token`: a tenant
  with engines exposed, a member and a token for it;
- ``mcp_gateway.testing.fixtures``: the same as pytest fixtures (add
  ``pytest_plugins = ["mcp_gateway.testing.fixtures"]`` to a conftest).

Nothing here is imported by the app itself.
"""

from __future__ import annotations

from mcp_gateway.testing.client import (
    HANDSHAKE_VERSION,
    MODERN_VERSION,
    MCPError,
    MCPResponse,
    MCPTestClient,
)
from mcp_gateway.testing.factories import issue_token, make_member, make_tenant

__all__ = [
    "HANDSHAKE_VERSION",
    "MODERN_VERSION",
    "MCPError",
    "MCPResponse",
    "MCPTestClient",
    "issue_token",
    "make_member",
    "make_tenant",
]
