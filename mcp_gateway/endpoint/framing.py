"""What the server wrappers refuse before Django: HTTP/1.1 without a Host.

RFC 9112 (section 3.2) requires a 400 for an HTTP/1.1 request that carries
no Host header; WSGI and ASGI servers pass such requests on, and Django
then falls back to the server's own name. Django's test client sends no
Host either (it has no wire), so the rule lives in the wrappers real
servers call (``wsgi.BoundaryGuard``, ``asgi.BoundaryGuard``), not in a
view. The refusal speaks each surface's error shape: JSON-RPC on an MCP
mount, the management API's ``{"code", "detail"}`` anywhere else.
"""

from __future__ import annotations

import json

from mcp_gateway import jsonrpc

MISSING_HOST = "An HTTP/1.1 request needs a Host header."


def is_mount(path: str) -> bool:
    """Whether ``path`` is an MCP mount (``…/mcp``)."""
    return path.rstrip("/").endswith("/mcp")


def lacks_host(http_version: str, has_host: bool) -> bool:
    return http_version == "1.1" and not has_host


def refusal_body(path: str, message: str) -> bytes:
    """A 400's body in the shape of the surface ``path`` belongs to."""
    if is_mount(path):
        return json.dumps(jsonrpc.error_body(jsonrpc.INVALID_REQUEST, message)).encode()
    return json.dumps({"code": "invalid", "detail": message}).encode()
