"""System checks; ids are stable (``mcp_gateway.E001`` …)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.apps import AppConfig, apps
from django.core import checks
from django.db import DatabaseError, connections, router
from django.urls import URLResolver, get_resolver

from mcp_gateway.conf import (
    AUDIT_DURABILITIES,
    AUTH_DISABLED,
    AUTH_REQUIRED,
    DRIFT_POLICIES,
    auth_may_be_disabled,
    gateway_settings,
    unknown_keys,
)
from mcp_gateway.observability import metrics


def check_settings(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = [
        checks.Error(
            f"Unknown key {key!r} in settings.MCP_GATEWAY.",
            hint="Check the spelling against mcp_gateway.conf.GatewaySettings.",
            id="mcp_gateway.E001",
        )
        for key in sorted(unknown_keys())
    ]
    cap = gateway_settings().MAX_CONCURRENT_CALLS_PER_TENANT
    if cap is not None and (not isinstance(cap, int) or cap < 1):
        errors.append(
            checks.Error(
                f"MCP_GATEWAY['MAX_CONCURRENT_CALLS_PER_TENANT'] is {cap!r}.",
                hint="Use a positive number of calls, or None for no cap.",
                id="mcp_gateway.E005",
            )
        )
    token = gateway_settings().METRICS_TOKEN
    if token and not metrics.available():
        errors.append(
            checks.Warning(
                "MCP_GATEWAY['METRICS_TOKEN'] is set but prometheus_client is "
                "not installed: no metrics are kept and the view answers 404.",
                hint='pip install "django-mcp-gateway[metrics]"',
                id="mcp_gateway.W030",
            )
        )
    if gateway_settings().AUTH_MODE not in (AUTH_REQUIRED, AUTH_DISABLED):
        errors.append(
            checks.Error(
                f"MCP_GATEWAY['AUTH_MODE'] is {gateway_settings().AUTH_MODE!r}.",
                hint=f"Use {AUTH_REQUIRED!r} or {AUTH_DISABLED!r}.",
                id="mcp_gateway.E002",
            )
        )
    policy = gateway_settings().DRIFT_POLICY
    if policy not in DRIFT_POLICIES:
        errors.append(
            checks.Error(
                f"MCP_GATEWAY['DRIFT_POLICY'] is {policy!r}.",
                hint="Use 'hold' (a changed tool waits for approval) or 'serve'.",
                id="mcp_gateway.E006",
            )
        )
    durability = gateway_settings().AUDIT_DURABILITY
    if durability not in AUDIT_DURABILITIES:
        errors.append(
            checks.Error(
                f"MCP_GATEWAY['AUDIT_DURABILITY'] is {durability!r}.",
                hint="Use 'async' (committed before the answer, flushed to "
                "disk within PostgreSQL's WAL writer delay) or 'durable' "
                "(flushed to disk before the answer).",
                id="mcp_gateway.E007",
            )
        )
    return errors


def check_auth_mode(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    if gateway_settings().AUTH_MODE != AUTH_DISABLED or auth_may_be_disabled():
        return []
    return [
        checks.Error(
            "MCP authentication is disabled outside a loopback development setup.",
            hint="Authentication may be disabled only with DEBUG on and every "
            "ALLOWED_HOSTS entry a loopback name (localhost, 127.0.0.1, [::1]).",
            id="mcp_gateway.E003",
        )
    ]


def check_stale_exposures(
    app_configs: Sequence[AppConfig] | None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[checks.CheckMessage]:
    from engines_app.registry import default_registry
    from mcp_gateway.models import Exposure

    alias = router.db_for_read(Exposure)
    if databases is None or alias not in databases:
        return []
    if Exposure._meta.db_table not in connections[alias].introspection.table_names():
        return []  # not migrated yet: `migrate` must work on a fresh clone
    try:
        rows = list(Exposure.objects.values_list("tenant__slug", "engine_id"))
    except DatabaseError:
        return []
    return [
        checks.Warning(
            f"Tenant {slug!r} exposes engine {engine_id!r}, which is not installed.",
            hint="The tool is not served. Unexpose it, or install the engine again.",
            obj=f"{slug}:{engine_id}",
            id="mcp_gateway.W001",
        )
        for slug, engine_id in rows
        if engine_id not in default_registry
    ]


def check_public_base_url_origin(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """``PUBLIC_BASE_URL`` is a scheme and a host (and port), nothing more.

    The mounts' paths come from ``reverse()``, which already includes the
    script prefix; a path here would be counted twice (or be a guess).
    """
    base = gateway_settings().PUBLIC_BASE_URL
    if not base:
        return []
    try:
        parts = urlsplit(base)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        parts = None
    if (
        parts is not None
        and parts.scheme in ("http", "https")
        and parts.hostname
        and parts.path in ("", "/")
        and not (parts.query or parts.fragment or parts.username or parts.password)
    ):
        return []
    return [
        checks.Error(
            f"MCP_GATEWAY['PUBLIC_BASE_URL'] is {base!r}; it must be "
            "scheme://host[:port] only, without a path, query or fragment.",
            hint="A site served under a path prefix sets FORCE_SCRIPT_NAME (or "
            "its server passes SCRIPT_NAME); the mount URLs include the prefix "
            "from there, e.g. https://example.com + /sub/t/<slug>/mcp.",
            id="mcp_gateway.E011",
        )
    ]


API_URLCONF = "mcp_gateway.api.urls"
API_APPS = ("rest_framework", "rest_framework.authtoken")


def check_api_requirements(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """The management API, once a URLconf includes it, needs DRF's apps."""
    if not _includes(get_resolver().url_patterns, API_URLCONF):
        return []
    missing = [name for name in API_APPS if not apps.is_installed(name)]
    if not missing:
        return []
    return [
        checks.Error(
            f"The URLconf includes {API_URLCONF!r}, which needs "
            f"{', '.join(repr(m) for m in missing)} in INSTALLED_APPS.",
            hint="Add 'rest_framework' and 'rest_framework.authtoken' to "
            "INSTALLED_APPS (and migrate), or do not include the API. Its "
            "schema and docs routes also need drf-spectacular: pip install "
            "'django-mcp-gateway[api-docs]' and add 'drf_spectacular'.",
            id="mcp_gateway.E020",
        )
    ]


def _includes(patterns: Sequence[Any], urlconf: str) -> bool:
    for pattern in patterns:
        if not isinstance(pattern, URLResolver):
            continue
        module = pattern.urlconf_name
        name = module if isinstance(module, str) else getattr(module, "__name__", "")
        if name == urlconf or _includes(pattern.url_patterns, urlconf):
            return True
    return False
