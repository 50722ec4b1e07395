"""The ASGI guard a site wraps its application in (the public entry point).

``application = BoundaryGuard(get_asgi_application())``; the guard itself
lives in ``mcp_gateway.endpoint.asgi``.
"""

from __future__ import annotations

from mcp_gateway.endpoint.asgi import BoundaryGuard, is_mount

__all__ = ["BoundaryGuard", "is_mount"]
