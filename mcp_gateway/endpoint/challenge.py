"""The 401 and 403 answers with their ``WWW-Authenticate`` challenges.

Header values are fixed text, never copied from the request or a token: the
only variable parts are the configured base URL and the tenant's slug (a
validated slug), in ``resource_metadata``.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse

from mcp_gateway import jsonrpc, scopes
from mcp_gateway.endpoint import boundary
from mcp_gateway.models import Tenant
from mcp_gateway.oauth.resource import metadata_url

REALM = "mcp"


def challenge(tenant: Tenant, *, invalid: bool) -> HttpResponse:
    """401: no credentials (no ``error=``) or an invalid token."""
    parts = [f'realm="{REALM}"']
    if invalid:
        parts.append('error="invalid_token"')
        parts.append('error_description="The access token is invalid or expired."')
    parts.extend(_discovery(tenant))
    message = "Invalid access token." if invalid else "Authentication required."
    response = boundary.error(401, jsonrpc.INVALID_REQUEST, message)
    response["WWW-Authenticate"] = "Bearer " + ", ".join(parts)
    return response


def insufficient_scope(tenant: Tenant, id: Any = jsonrpc.NO_ID) -> HttpResponse:
    """403: the token's scopes do not cover this call (step-up possible)."""
    parts = [
        'error="insufficient_scope"',
        f'scope="{scopes.TOOLS}"',
        'error_description="The access token does not allow this tool call."',
    ]
    if tenant.authorization_servers.exists():
        parts.append(f'resource_metadata="{metadata_url(tenant.slug)}"')
    response = boundary.error(
        403, jsonrpc.INVALID_REQUEST, "Insufficient scope for this tool.", id
    )
    response["WWW-Authenticate"] = "Bearer " + ", ".join(parts)
    return response


def _discovery(tenant: Tenant) -> list[str]:
    """``resource_metadata`` and ``scope`` for a mount with an authorization server."""
    if not tenant.authorization_servers.exists():
        return []
    metadata = metadata_url(tenant.slug)
    return [f'resource_metadata="{metadata}"', f'scope="{scopes.TOOLS}"']
