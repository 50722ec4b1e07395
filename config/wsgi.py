from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from django.urls import get_resolver  # noqa: E402 - needs the settings

# Import the URLconf (and the MCP SDK behind it) at start-up, not on the
# first request, which would otherwise wait seconds for those imports.
get_resolver().url_patterns  # noqa: B018
