"""The app's settings: ``settings.MCP_GATEWAY``, read lazily and typed."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

SETTING_NAME = "MCP_GATEWAY"
AUTH_REQUIRED = "required"
AUTH_DISABLED = "dangerously-disabled-for-development"
DRIFT_HOLD = "hold"
DRIFT_SERVE = "serve"
DRIFT_POLICIES = (DRIFT_HOLD, DRIFT_SERVE)
CALL_APPROVAL_CLIENT = "client"
CALL_APPROVAL_STAFF = "staff"
CALL_APPROVALS = (CALL_APPROVAL_CLIENT, CALL_APPROVAL_STAFF)
AUDIT_DURABLE = "durable"
AUDIT_ASYNC = "async"
AUDIT_DURABILITIES = (AUDIT_DURABLE, AUDIT_ASYNC)


@dataclasses.dataclass(frozen=True)
class GatewaySettings:
    ENGINES: tuple[str, ...] = ()
    AUTH_MODE: str = AUTH_REQUIRED
    PUBLIC_BASE_URL: str = ""
    ALLOWED_ORIGINS: tuple[str, ...] = ()
    MAX_REQUEST_BYTES: int = 1_048_576
    ENGINE_DEADLINE_SECONDS: float = 30.0
    TOOLS_LIST_TTL_MS: int = 60_000
    RATE_LIMIT_FAIL_OPEN: bool = True
    RATE_LIMIT_CACHE: str = "default"
    ENGINE_THREADS: int = 16
    MAX_CONCURRENT_CALLS_PER_TENANT: int | None = None
    JWKS_TIMEOUT_SECONDS: float = 5.0
    OAUTH_MAX_RESPONSE_BYTES: int = 262_144
    OAUTH_FAILURE_CACHE_SECONDS: float = 30.0
    OAUTH_ALLOWED_PRIVATE_HOSTS: tuple[str, ...] = ()
    JWKS_CACHE_SECONDS: int = 3600
    INTROSPECTION_CACHE_SECONDS: int = 60
    ALLOW_INSECURE_LOOPBACK_ISSUERS: bool = False
    SERVER_NAME: str = "django-mcp-gateway"
    TOKEN_LAST_USED_INTERVAL_SECONDS: int = 60
    ASYNC_ENDPOINT: bool | None = None
    ASGI_FAST_PATH: bool = True
    """Under ASGI, serve the MCP mount without Django's middleware chain
    (``mcp_gateway.endpoint.fastpath``: which middleware it replays, skips,
    or stands aside for)."""
    ASGI_LOOP_ANSWERS: bool = True
    """Under ASGI on PostgreSQL (psycopg 3), answer a warm request on the
    event loop, its audit row written with psycopg's async connection
    (``mcp_gateway.audit.onloop``), instead of in a request thread."""
    WSGI_FAST_PATH: bool = True
    """Under WSGI, serve the MCP mount with the middleware the ASGI fast path
    replays and without those it skips (``mcp_gateway.endpoint.wsgifast``)."""
    SSE_KEEPALIVE_SECONDS: float = 15.0
    MAX_LISTENERS_PER_TENANT: int = 100
    """Open change streams (GET / ``subscriptions/listen``) per tenant and process."""
    MAX_LISTENERS_PER_PROCESS: int = 1000
    """Open change streams per process, all tenants."""
    REQUEST_STATE_TTL_SECONDS: float = 600.0
    AUDIT_CALLS: bool = True
    AUDIT_DURABILITY: str = AUDIT_ASYNC
    """``"async"``: a call's audit row commits before the answer without
    waiting for the disk (PostgreSQL); ``"durable"``: on disk before it."""
    SIGNAL_BEARER_FAILURES: bool = True
    BUS: str = "auto"
    BUS_DATABASE: str = "default"
    METRICS_TOKEN: str = ""
    DRIFT_POLICY: str = DRIFT_HOLD
    CALL_APPROVAL: str = CALL_APPROVAL_CLIENT
    """Who confirms a call to a tool that requires confirmation: the caller
    (``"client"``) or staff in the admin (``"staff"``)."""
    SECRET_KEYS: tuple[str, ...] = ()
    """Fernet keys for engine secrets, newest first (the first encrypts)."""
    SECRETS_CACHE_SECONDS: float = 300.0
    PRINCIPAL_CACHE_SECONDS: float = 10.0
    """Longest a token's principal is trusted without the bus saying it
    changed (the bound on staleness while the bus is down); 0: no cache."""
    AUDIT_STREAM: str = ""
    """Where sealing writes the audit as JSON lines: a file path, ``stdout``,
    or ``""`` (off)."""
    AUDIT_ANCHOR_KEY: str = ""
    """HMAC key signing each tenant's sealed chain head; ``""``: unsigned."""


def user_settings() -> dict[str, Any]:
    value = getattr(settings, SETTING_NAME, {})
    return dict(value) if isinstance(value, dict) else {}


def unknown_keys() -> set[str]:
    known = {f.name for f in dataclasses.fields(GatewaySettings)}
    return set(user_settings()) - known


@functools.cache
def gateway_settings() -> GatewaySettings:
    known = {f.name for f in dataclasses.fields(GatewaySettings)}
    overrides = {k: _freeze(v) for k, v in user_settings().items() if k in known}
    return GatewaySettings(**overrides)  # unknown keys are reported by check E001


def _freeze(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@receiver(setting_changed)
def _reset_gateway_settings(*, setting: str, **kwargs: object) -> None:
    if setting == SETTING_NAME:
        gateway_settings.cache_clear()


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def auth_may_be_disabled() -> bool:
    """Whether this is a loopback development setup: DEBUG on, and every
    ``ALLOWED_HOSTS`` entry a loopback name. The endpoint refuses every
    request when authentication is disabled anywhere else."""
    hosts = set(settings.ALLOWED_HOSTS)
    return bool(settings.DEBUG and hosts and hosts <= LOOPBACK_HOSTS)
