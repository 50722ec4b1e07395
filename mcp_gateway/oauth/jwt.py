"""Verify a JWT access token against a tenant's trusted issuers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jwt

from mcp_gateway.models import AuthorizationServer
from mcp_gateway.oauth import jwks
from mcp_gateway.oauth.config import allowed_algorithms
from mcp_gateway.oauth.resource import audience_matches

LEEWAY_SECONDS = 30
REQUIRED_CLAIMS = ["exp", "iss"]


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2


def claimed_issuer(token: str) -> str | None:
    """The ``iss`` a JWT-shaped token claims (unverified), else ``None``."""
    if not looks_like_jwt(token):
        return None
    try:
        issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
    except jwt.PyJWTError:
        return None
    return issuer if isinstance(issuer, str) else None


def verify(
    token: str, servers: Sequence[AuthorizationServer], resource: str
) -> tuple[AuthorizationServer, dict[str, Any]] | None:
    """The issuing server and the claims of a valid token, else ``None``.

    Valid means: issued by one of ``servers`` (kind JWT), signed with an
    allowed asymmetric algorithm by a key of the issuer's key set, within
    ``exp``/``nbf`` (small leeway), and ``aud`` names ``resource``.

    Raises:
        fetch.AuthUnavailable: the issuer's keys cannot be fetched.
    """
    try:
        header = jwt.get_unverified_header(token)
        issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
    except jwt.PyJWTError:
        return None
    server = _trusted(servers, issuer)
    alg = header.get("alg")
    if server is None or alg not in allowed_algorithms(server.algorithms):
        return None
    kid = header.get("kid")
    key = jwks.find_key(server, kid if isinstance(kid, str) else None)
    if key is None or key.get("alg", alg) != alg:
        return None
    claims = _decode(token, key, alg, server.issuer)
    if claims is None or not audience_matches(claims.get("aud"), resource):
        return None
    return server, claims


def _trusted(
    servers: Sequence[AuthorizationServer], issuer: object
) -> AuthorizationServer | None:
    kind = AuthorizationServer.Kind.JWT
    return next((s for s in servers if s.kind == kind and s.issuer == issuer), None)


def _decode(
    token: str, key: dict[str, Any], alg: str, issuer: str
) -> dict[str, Any] | None:
    try:
        return jwt.decode(
            token,
            jwt.PyJWK(key, algorithm=alg),
            algorithms=[alg],
            issuer=issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": REQUIRED_CLAIMS, "verify_aud": False},
        )
    except (jwt.PyJWTError, ValueError, TypeError):
        return None
