"""The WSGI guard a site wraps its application in (the public entry point).

``application = BoundaryGuard(get_wsgi_application())``; the guard itself
lives in ``mcp_gateway.endpoint.wsgi``.
"""

from __future__ import annotations

from mcp_gateway.endpoint.wsgi import BoundaryGuard

__all__ = ["BoundaryGuard"]
