"""System checks of the OAuth resource server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.apps import AppConfig
from django.conf import settings
from django.core import checks

from mcp_gateway.conf import gateway_settings

BACKEND = "mcp_gateway.oauth.backend.OAuthBackend"


def check_public_base_url(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """Audiences and metadata need an absolute base URL without a path."""
    if BACKEND not in settings.AUTHENTICATION_BACKENDS:
        return []
    parts = urlsplit(gateway_settings().PUBLIC_BASE_URL)
    if parts.scheme in ("http", "https") and parts.netloc and not parts.query:
        return []
    return [
        checks.Error(
            "MCP_GATEWAY['PUBLIC_BASE_URL'] must be an absolute http(s) URL "
            "when the OAuth backend is enabled.",
            hint="Set it to the URL clients call, e.g. https://mcp.example.com; "
            "OAuth tokens must name PUBLIC_BASE_URL + /t/<slug>/mcp as audience.",
            id="mcp_gateway.E010",
        )
    ]
