"""System checks for the bus settings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core import checks

from mcp_gateway.bus import backends


def check_bus(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    reason = backends.problem()
    if reason is None:
        return []
    return [
        checks.Error(
            reason,
            hint=(
                "MCP_GATEWAY['BUS'] (env MCP_BUS): auto, postgresql, redis, "
                "local or off; see docs/deployment.md, 'The change bus'."
            ),
            id="mcp_gateway.E030",
        )
    ]
