from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The settings pick the database connection handling for ASGI.
os.environ.setdefault("MCP_SERVER_INTERFACE", "asgi")
django_application = get_asgi_application()

from django.urls import get_resolver  # noqa: E402 - needs the settings

from mcp_gateway.asgi import BoundaryGuard  # noqa: E402 - needs the apps loaded

# The guard also tells mcp_gateway's URLconf to serve the async endpoint.
application = BoundaryGuard(django_application)
# Import the URLconf now: on the first request it would block the event loop.
get_resolver().url_patterns  # noqa: B018
