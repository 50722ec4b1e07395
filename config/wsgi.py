from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The settings pick the database connection handling for WSGI.
os.environ.setdefault("MCP_SERVER_INTERFACE", "wsgi")
django_application = get_wsgi_application()

from django.urls import get_resolver  # noqa: E402 - needs the settings

from mcp_gateway.wsgi import BoundaryGuard  # noqa: E402 - needs the apps loaded

# The guard answers what must never reach Django (HTTP/1.1 without Host).
application = BoundaryGuard(django_application)

# Import the URLconf (and the MCP SDK behind it) at start-up, not on the
# first request, which would otherwise wait seconds for those imports.
get_resolver().url_patterns  # noqa: B018
