"""The MCP mounts; sites include this under ``t/``."""

from __future__ import annotations

from django.urls import URLPattern

app_name = "mcp_gateway"

urlpatterns: list[URLPattern] = []  # the endpoint is added by the endpoint change
