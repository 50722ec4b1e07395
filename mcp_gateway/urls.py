"""The MCP mounts; sites include this under ``t/``."""

from __future__ import annotations

from django.urls import path

app_name = "mcp_gateway"

urlpatterns: list = []  # the endpoint is added by the endpoint change
