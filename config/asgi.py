from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_asgi_application()

from mcp_gateway.asgi import BoundaryGuard  # noqa: E402 - needs the apps loaded

application = BoundaryGuard(django_application)
