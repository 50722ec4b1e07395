"""Check an opaque access token by RFC 7662 introspection at its issuer.

A positive answer is cached for ``INTROSPECTION_CACHE_SECONDS`` at most and
never past the token's ``exp``; negative answers are not cached. A tenant
has at most one introspection server, so an opaque token only ever goes to
the one server that can have issued it.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from mcp_gateway.conf import gateway_settings
from mcp_gateway.models import AuthorizationServer
from mcp_gateway.oauth import breaker, fetch, store
from mcp_gateway.oauth.jwt import LEEWAY_SECONDS
from mcp_gateway.oauth.resource import audience_matches


def introspect(
    token: str, server: AuthorizationServer, resource: str
) -> dict[str, Any] | None:
    """The token's claims when ``server`` says it is active for ``resource``.

    Raises:
        fetch.AuthUnavailable: the introspection endpoint did not answer.
    """
    key = _cache_key(server, token)
    claims = store.get(key)
    if not isinstance(claims, dict):
        with breaker.guarded(server.issuer):
            claims = _ask(token, server)
        ttl = _ttl(claims)
        if ttl <= 0:
            return None
        store.set(key, claims, ttl)
    return claims if _valid(claims, server, resource) else None


def _ask(token: str, server: AuthorizationServer) -> dict[str, Any]:
    return fetch.post_form(
        server.introspection_endpoint,
        {"token": token, "token_type_hint": "access_token"},
        (server.client_id, server.client_secret),
    )


def _ttl(claims: dict[str, Any]) -> int:
    """Seconds to keep a positive answer; 0 for an inactive token."""
    if claims.get("active") is not True:
        return 0
    ttl = gateway_settings().INTROSPECTION_CACHE_SECONDS
    exp = claims.get("exp")
    if isinstance(exp, int | float):
        ttl = min(ttl, int(exp - time.time()))
    return ttl


def _valid(claims: dict[str, Any], server: AuthorizationServer, resource: str) -> bool:
    now = time.time()
    exp, nbf, iss = claims.get("exp"), claims.get("nbf"), claims.get("iss")
    return (
        claims.get("active") is True
        and (not isinstance(exp, int | float) or exp > now - LEEWAY_SECONDS)
        and (not isinstance(nbf, int | float) or nbf <= now + LEEWAY_SECONDS)
        and (iss is None or iss == server.issuer)
        and audience_matches(claims.get("aud"), resource)
    )


def _cache_key(server: AuthorizationServer, token: str) -> str:
    digest = hashlib.sha256(f"{server.pk}:{token}".encode()).hexdigest()
    return f"mcp_gateway:oauth:introspected:{digest}"
