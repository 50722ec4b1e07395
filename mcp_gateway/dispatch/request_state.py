"""Sealed, expiring ``requestState`` for 2026-07-28 multi round-trip calls.

The SDK's ``RequestStateBoundary`` middleware seals every outgoing
``requestState`` and verifies every echo before a handler sees it: AES-256-GCM
(authenticated encryption, so the state is signed and unreadable), with a
claims envelope binding the method, the tool name, a digest of the arguments,
an expiry and the principal. The key is derived with HMAC-SHA256 from
``SECRET_KEY`` (``SECRET_KEY_FALLBACKS`` still open older states), so every
worker of every host verifies what any other minted. The principal binding
is the tenant and the user, so a state is worthless at another tenant or to
another user. A failed check is JSON-RPC -32602; when the state was the
gateway's own confirmation (``approval``) and it only ran out of time, the
call's audit outcome says ``expired``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils.crypto import salted_hmac
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import (
    RequestStateBoundary,
    RequestStateSecurity,
    compact_json,
)
from mcp.shared.exceptions import MCPError

from mcp_gateway.audit import callrecord
from mcp_gateway.conf import gateway_settings

_KEY_SALT = "mcp_gateway.request_state"


def derived_keys() -> list[bytes]:
    """32-byte keys from ``SECRET_KEY`` (sealing) and its fallbacks."""
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return [
        salted_hmac(_KEY_SALT, "key", secret=s, algorithm="sha256").digest()
        for s in secrets
    ]


def bound_principal(ctx: ServerRequestContext[Any, Any]) -> str:
    """Tenant and user of the request: the identity a state is bound to.

    Raises:
        TypeError: the request context does not come from ``mcp_gateway``
            (the SDK boundary answers it as an invalid state).
    """
    principal = getattr(ctx.request, "principal", None)
    if principal is None:
        raise TypeError("The request context carries no principal.")
    return compact_json([principal.tenant, principal.user])


class Boundary:
    """The SDK's boundary, skipped for params that are not an object.

    The SDK's boundary reads ``params`` as a mapping; array params go on
    untouched, so the server answers them -32602 as before.
    """

    def __init__(self, server_name: str) -> None:
        security = RequestStateSecurity(
            keys=derived_keys(),
            ttl=gateway_settings().REQUEST_STATE_TTL_SECONDS,
            bind_principal=bound_principal,
        )
        self._security = security
        self._sdk = RequestStateBoundary(security, default_audience=server_name)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.params is not None and not isinstance(ctx.params, Mapping):
            return await call_next(ctx)
        try:
            return await self._sdk(ctx, call_next)
        except MCPError:
            if self._expired_confirmation(ctx):
                _note_expired(ctx)
            raise

    def _expired_confirmation(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether the refused state is a confirmation past its expiry (one
        this server sealed: the codec authenticates it)."""
        wire = ctx.params.get("requestState") if ctx.params is not None else None
        if ctx.method != "tools/call" or not isinstance(wire, str):
            return False
        try:
            claims = json.loads(self._security.codec.unseal(wire))
            inner = json.loads(claims["s"])
            expired = not time.time() < claims["exp"]
        except Exception:  # forged, foreign or malformed: merely invalid
            return False
        return bool(expired and isinstance(inner, dict) and "c" in inner)


def _note_expired(ctx: ServerRequestContext[Any, Any]) -> None:
    record = getattr(ctx.request, "record", None)
    if isinstance(record, callrecord.CallRecord):
        record.finish(callrecord.EXPIRED, "-32602")
