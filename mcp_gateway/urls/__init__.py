"""The MCP mounts; sites include this under ``t/``.

The endpoint is the sync view under WSGI and the async one under ASGI,
chosen once, when this URLconf is imported (see ``serving``).
"""

from __future__ import annotations

from django.urls import path

from mcp_gateway.serving import endpoint_view

app_name = "mcp_gateway"

urlpatterns = [
    path("<slug:slug>/mcp", endpoint_view(), name="endpoint"),
]
