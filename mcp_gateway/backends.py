"""Django auth backends for MCP requests."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.backends import BaseBackend
from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from mcp_gateway import credentials, principals, tokens, users
from mcp_gateway.compiled import CompiledSelect
from mcp_gateway.conf import gateway_settings
from mcp_gateway.credentials import Credential
from mcp_gateway.models import ApiToken, Membership, Tenant


class ApiTokenBackend(BaseBackend):
    """Authenticate a tenant-bound API token for that tenant only.

    ``tenant`` is a Tenant or the slug of an active one. One query reads the
    token, its user, its tenant (with the catalog version) and whether the
    user is a member; ``principals`` keeps that row until the bus says it
    changed (or ``PRINCIPAL_CACHE_SECONDS`` pass), so a warm request asks
    nothing. Secret, expiry, activity and membership are checked each time.
    On success it grants a ``credentials.Credential`` (the token row, its
    tenant and scopes), so the view needs no other query.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        *,
        bearer_token: str | None = None,
        tenant: Tenant | str | None = None,
        **kwargs: Any,
    ) -> User | None:
        if bearer_token is None or tenant is None:
            return None
        parts = tokens.split(bearer_token)
        if parts is None:
            return None
        token = _load(parts[0], tenant)
        if token is None or not _accepts(token, parts[1]):
            return None
        user = token.user
        _touch(token)
        credential = Credential(user, token.tenant, frozenset(token.scopes), token)
        credentials.grant(credential)
        return user

    def get_user(self, user_id: Any) -> User | None:
        """Load a session's user as ``ModelBackend`` does (``force_login``)."""
        return users.session_user(user_id)  # type: ignore[no-any-return]


def _token_query(prefix: str, slug: str) -> QuerySet[ApiToken]:
    membership = Membership.objects.filter(
        tenant=OuterRef("tenant"), user=OuterRef("user")
    )
    return (
        ApiToken.objects.select_related("user", "tenant")
        .annotate(is_member=Exists(membership))
        .filter(prefix=prefix, tenant__slug=slug, tenant__is_active=True)
    )


_token = CompiledSelect(_token_query, "prefix", "slug")


def _load(prefix: str, tenant: Tenant | str) -> ApiToken | None:
    """The token row, from the process's principal cache when it is warm."""
    slug = tenant if isinstance(tenant, str) else tenant.slug
    token = principals.get(prefix, slug)
    if token is not None:
        return token
    since = principals.generation()
    token = _token.first(prefix=prefix, slug=slug)
    if token is not None:
        principals.keep(prefix, slug, token, since)
    return token


def _accepts(token: ApiToken, secret: str) -> bool:
    """The secret matches, the token is usable, its user an active member."""
    return (
        tokens.matches(token, secret)
        and token.is_usable
        and token.user.is_active
        and token.is_member  # type: ignore[attr-defined]
    )


def accepts_from_memory(bearer_token: str, slug: str) -> ApiToken | None:
    """The token row if :class:`ApiTokenBackend` accepts ``bearer_token``
    for tenant ``slug`` without a query: its row kept (``principals``),
    accepted, and its use recorded recently enough that nothing is written
    now (the ASGI view answers such a request on the loop)."""
    parts = tokens.split(bearer_token)
    if parts is None:
        return None
    token = principals.get(parts[0], slug)
    if token is None or not _accepts(token, parts[1]):
        return None
    return None if _use_due(token, timezone.now()) else token


def _use_due(token: ApiToken, now: datetime) -> bool:
    interval = timedelta(seconds=gateway_settings().TOKEN_LAST_USED_INTERVAL_SECONDS)
    return token.last_used_at is None or now - token.last_used_at >= interval


def _touch(token: ApiToken) -> None:
    """Record use, at most once per interval, without a read."""
    now = timezone.now()
    if _use_due(token, now):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
