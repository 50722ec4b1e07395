"""The Prometheus metrics view; sites include this where they scrape it.

The reference project serves it at ``/metrics``::

    path("metrics", include("mcp_gateway.urls.metrics")),
"""

from __future__ import annotations

from django.urls import path

from mcp_gateway.observability.metrics_view import metrics_view

app_name = "mcp_gateway_metrics"

urlpatterns = [
    path("", metrics_view, name="metrics"),
]
