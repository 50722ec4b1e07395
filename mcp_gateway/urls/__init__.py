"""The MCP mounts; sites include this under ``t/``.

One pattern; it resolves each request to the sync view under WSGI and to
the async one under ASGI (``endpoint.serving``).
"""

from __future__ import annotations

from mcp_gateway.endpoint.serving import endpoint_pattern

app_name = "mcp_gateway"

urlpatterns = [
    endpoint_pattern("<slug:slug>/mcp", name="endpoint"),
]
