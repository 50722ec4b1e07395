"""Tenant-bound API tokens: ``mcpgw_<prefix>_<secret>``, stored hashed."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from mcp_gateway import scopes as known_scopes
from mcp_gateway.models import ApiToken, Membership, Tenant

TOKEN_PREFIX = "mcpgw"  # noqa: S105 - a public marker, not a secret


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once, never stored


def hash_secret(secret: str) -> str:
    """Hash a high-entropy secret; SHA-256 suffices (no password stretching)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def split(raw: str) -> tuple[str, str] | None:
    """Return (prefix, secret) of a well-formed token, else ``None``."""
    parts = raw.split("_")
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def matches(token: ApiToken, secret: str) -> bool:
    return hmac.compare_digest(token.secret_hash, hash_secret(secret))


def issue(
    tenant: Tenant,
    user: User,
    *,
    scopes: Sequence[str] = known_scopes.TOKEN_DEFAULT,
    expires_in: int | None = None,
    name: str = "",
    calls_per_day: int | None = None,
    calls_per_month: int | None = None,
) -> IssuedToken:
    """Create a token; makes the user a member of the tenant if needed.

    ``calls_per_day`` / ``calls_per_month`` are the token's own quotas
    (``None``: the tenant's quota per token applies).

    Raises:
        ValueError: an unknown scope, a non-positive lifetime or quota.
    """
    unknown = sorted(set(scopes) - known_scopes.KNOWN)
    if unknown:
        raise ValueError(f"Unknown scope(s): {', '.join(unknown)}.")
    if expires_in is not None and expires_in <= 0:
        raise ValueError("The lifetime must be a positive number of seconds.")
    quotas = (calls_per_day, calls_per_month)
    if any(quota is not None and quota <= 0 for quota in quotas):
        raise ValueError("A quota must be a positive number of calls.")
    prefix, secret = secrets.token_hex(6), secrets.token_urlsafe(32).replace("_", "-")
    expires_at = timezone.now() + timedelta(seconds=expires_in) if expires_in else None
    with transaction.atomic():
        Membership.objects.get_or_create(tenant=tenant, user=user)
        token = ApiToken.objects.create(
            tenant=tenant,
            user=user,
            prefix=prefix,
            secret_hash=hash_secret(secret),
            scopes=list(dict.fromkeys(scopes or known_scopes.TOKEN_DEFAULT)),
            expires_at=expires_at,
            name=name,
            calls_per_day=calls_per_day,
            calls_per_month=calls_per_month,
        )
    return IssuedToken(token, f"{TOKEN_PREFIX}_{prefix}_{secret}")


def revoke(token_or_prefix: str) -> ApiToken | None:
    """Revoke by full token or by prefix; ``None`` when no such token."""
    parts = split(token_or_prefix)
    prefix = parts[0] if parts else token_or_prefix
    token = ApiToken.objects.filter(prefix=prefix).first()
    if token is None:
        return None
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
