"""The reference project's own system check: its insecure development key.

The id stays ``mcp_gateway.E004`` (the id it had when the app itself
registered it); only the reference project, through this app, registers it,
so a host site with its own key never sees it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks

INSECURE_PREFIX = "django-insecure-"


def check_secret_key(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    if settings.DEBUG or not str(settings.SECRET_KEY).startswith(INSECURE_PREFIX):
        return []
    return [
        checks.Error(
            "SECRET_KEY is the insecure development default while DEBUG is off.",
            hint="Set the SECRET_KEY environment variable to a long random value.",
            id="mcp_gateway.E004",
        )
    ]
