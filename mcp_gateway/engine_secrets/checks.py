"""System checks of the secret store (``manage.py check``; the database
ones with ``--database default`` and before ``migrate``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.db import DatabaseError

from mcp_gateway.engine_secrets import store
from mcp_gateway.engine_secrets.keys import SecretKeyError, keyring


def check_secret_keys(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    keyring.cache_clear()
    try:
        keyring()
    except SecretKeyError as exc:
        return [
            checks.Error(
                str(exc),
                hint="Each entry is a Fernet key; list the newest first.",
                id="mcp_gateway.E040",
            )
        ]
    return []


def check_stored_keys(
    app_configs: Sequence[AppConfig] | None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[checks.CheckMessage]:
    if not databases:
        return []
    try:
        store.verify_keys()
    except SecretKeyError as exc:
        return [
            checks.Error(
                str(exc),
                hint="Keep every key that encrypted a stored secret in "
                "SECRET_KEYS until `mcp_secrets rotate` has re-encrypted them.",
                id="mcp_gateway.E041",
            )
        ]
    except DatabaseError:
        return []  # not migrated yet
    return []


def check_missing_secrets(
    app_configs: Sequence[AppConfig] | None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[checks.CheckMessage]:
    if not databases:
        return []
    from mcp_gateway.engine_secrets.service import missing_by_engine
    from mcp_gateway.models import Tenant

    found: list[checks.CheckMessage] = []
    try:
        for tenant in Tenant.objects.filter(is_active=True).order_by("slug"):
            for engine_id, names in missing_by_engine(tenant).items():
                found.append(
                    checks.Warning(
                        f"Tenant {tenant.slug!r} exposes {engine_id!r}, which "
                        f"needs the secret(s) {', '.join(names)}; calls answer "
                        "an error until they are set.",
                        hint="Set them in the admin (Engine secrets), the API "
                        "or `manage.py mcp_secrets set`.",
                        id="mcp_gateway.W040",
                    )
                )
    except DatabaseError:
        return []
    return found
