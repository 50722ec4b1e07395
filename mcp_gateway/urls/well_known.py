"""RFC 9728 metadata of the mounts; sites include this at their root."""

from __future__ import annotations

from django.urls import path

from mcp_gateway.oauth import discovery

app_name = "mcp_gateway_well_known"

urlpatterns = [
    path(
        ".well-known/oauth-protected-resource/<path:resource_path>",
        discovery.protected_resource,
        name="protected-resource",
    ),
]
