"""Pick the endpoint view for this process: sync (WSGI) or async (ASGI).

Django runs a view the way it is written: an ``async def`` view under WSGI
would cost an event loop per request, a sync view under ASGI a thread hop
and no streaming. So the URLconf picks one when it is imported:

- ``MCP_GATEWAY["ASYNC_ENDPOINT"] = True`` / ``False`` forces the choice;
- ``None`` (the default) means "async when this process serves ASGI",
  which ``mcp_gateway.asgi.BoundaryGuard`` announces when the ASGI
  entry point (``config/asgi.py``) wraps Django's application with it —
  before any request imports the URLconf.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_gateway.conf import gateway_settings

_asgi = {"entered": False}


def announce_asgi() -> None:
    """Record that this process serves ASGI (called by ``BoundaryGuard``)."""
    _asgi["entered"] = True


def uses_async_endpoint() -> bool:
    configured = gateway_settings().ASYNC_ENDPOINT
    return _asgi["entered"] if configured is None else bool(configured)


def endpoint_view() -> Callable[..., Any]:
    """The endpoint view this process serves."""
    from mcp_gateway.observe import observed  # metrics and traces (HTTP level)

    if uses_async_endpoint():
        from mcp_gateway.aviews import aendpoint

        return observed(aendpoint)
    from mcp_gateway.views import endpoint

    return observed(endpoint)
