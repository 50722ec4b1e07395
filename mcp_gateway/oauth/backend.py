"""The Django auth backend for OAuth access tokens (JWT or introspected)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import BaseBackend
from django.contrib.auth.models import User
from django.http import HttpRequest

from mcp_gateway import credentials, tokens, users
from mcp_gateway.credentials import Credential
from mcp_gateway.models import AuthorizationServer, Tenant
from mcp_gateway.oauth import introspection, jwt
from mcp_gateway.oauth.resource import resource_url


class OAuthBackend(BaseBackend):
    """Authenticate an OAuth access token issued for a tenant's mount.

    ``tenant`` is a Tenant or the slug of an active one. The token must come
    from one of the tenant's authorization servers, name the mount's
    canonical URL in ``aud``, and map to an active member of the tenant. On
    success it grants a ``credentials.Credential`` (tenant and scopes).

    Raises:
        fetch.AuthUnavailable: an authorization server did not answer; the
            view answers 503 (never fail open).
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        *,
        bearer_token: str | None = None,
        tenant: Tenant | str | None = None,
        **kwargs: Any,
    ) -> User | None:
        if bearer_token is None or tenant is None or tokens.split(bearer_token):
            return None  # API tokens belong to ApiTokenBackend
        servers = _servers(tenant)
        if not servers:
            return None
        found = _check(bearer_token, servers, resource_url(servers[0].tenant.slug))
        if found is None:
            return None
        server, claims = found
        user = _user(server, claims)
        if user is None:
            return None
        credentials.grant(Credential(user, server.tenant, scopes_of(claims)))
        return user

    def get_user(self, user_id: Any) -> User | None:
        """Load a session's user as ``ModelBackend`` does (``force_login``)."""
        return users.session_user(user_id)  # type: ignore[no-any-return]


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    """``scope`` (space-separated, RFC 9068) or ``scp`` (a list or a string)."""
    value = claims.get("scope", claims.get("scp", ""))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(s for s in value if isinstance(s, str))
    return frozenset()


def _servers(tenant: Tenant | str) -> list[AuthorizationServer]:
    servers = AuthorizationServer.objects.select_related("tenant")
    if isinstance(tenant, str):
        servers = servers.filter(tenant__slug=tenant, tenant__is_active=True)
    else:
        servers = servers.filter(tenant=tenant)
    return list(servers)


def _check(
    token: str, servers: Sequence[AuthorizationServer], resource: str
) -> tuple[AuthorizationServer, dict[str, Any]] | None:
    """A JWT goes to its issuer; any other token to the tenant's one
    introspection server, and a JWT there only when that server issued it."""
    issuer = jwt.claimed_issuer(token)
    if issuer is not None:
        found = jwt.verify(token, servers, resource)
        if found is not None:
            return found
    kind = AuthorizationServer.Kind.INTROSPECTION
    server = next((s for s in servers if s.kind == kind), None)
    if server is None or issuer not in (None, server.issuer):
        return None
    claims = introspection.introspect(token, server, resource)
    return None if claims is None else (server, claims)


def _user(server: AuthorizationServer, claims: dict[str, Any]) -> User | None:
    """The one active member of the tenant the configured claim names."""
    value = claims.get(server.user_claim)
    if not isinstance(value, str | int) or isinstance(value, bool) or value == "":
        return None
    model = get_user_model()
    if server.user_field == AuthorizationServer.UserField.EMAIL:
        lookup = {f"{model.get_email_field_name()}__iexact": str(value)}
    else:
        lookup = {model.USERNAME_FIELD: str(value)}
    members = model._default_manager.filter(mcp_memberships__tenant=server.tenant)
    users = list(members.filter(**lookup)[:2])
    if len(users) != 1 or not getattr(users[0], "is_active", True):
        return None  # none, ambiguous, or inactive (as ModelBackend decides)
    return users[0]
