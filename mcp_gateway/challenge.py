"""The 401 answer with its ``WWW-Authenticate`` challenge.

Header values are fixed text, never copied from the request or a token.
"""

from __future__ import annotations

from django.http import HttpResponse

from mcp_gateway import boundary, jsonrpc
from mcp_gateway.models import Tenant

REALM = "mcp"


def challenge(tenant: Tenant, *, invalid: bool) -> HttpResponse:
    """401: no credentials (no ``error=``) or an invalid token."""
    parts = [f'realm="{REALM}"']
    if invalid:
        parts.append('error="invalid_token"')
        parts.append('error_description="The access token is invalid or expired."')
    message = "Invalid access token." if invalid else "Authentication required."
    response = boundary.error(401, jsonrpc.INVALID_REQUEST, message)
    response["WWW-Authenticate"] = "Bearer " + ", ".join(parts)
    return response
