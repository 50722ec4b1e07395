"""The MCP mounts; sites include this under ``t/``."""

from __future__ import annotations

from django.urls import path

from mcp_gateway import views

app_name = "mcp_gateway"

urlpatterns = [
    path("<slug:slug>/mcp", views.endpoint, name="endpoint"),
]
