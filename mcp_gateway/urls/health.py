"""Liveness and readiness probes; sites include this where their balancer looks.

The reference project serves them at ``/healthz`` and ``/readyz``::

    path("", include("mcp_gateway.urls.health")),
"""

from __future__ import annotations

from django.urls import path

from mcp_gateway.observability.health import liveness_view, readiness_view

app_name = "mcp_gateway_health"

urlpatterns = [
    path("healthz", liveness_view, name="healthz"),
    path("readyz", readiness_view, name="readyz"),
]
