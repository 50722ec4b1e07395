"""The schema and docs views (drf-spectacular), staff only like the API."""

from __future__ import annotations

from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from mcp_gateway.api.base import StaffViewSet


class SchemaView(SpectacularAPIView):
    """The schema, JSON unless YAML is asked for (``?format=yaml``)."""

    renderer_classes = [
        OpenApiJsonRenderer,
        OpenApiJsonRenderer2,
        OpenApiYamlRenderer,
        OpenApiYamlRenderer2,
    ]
    authentication_classes = StaffViewSet.authentication_classes
    permission_classes = StaffViewSet.permission_classes
    get_exception_handler = StaffViewSet.get_exception_handler


class DocsView(SpectacularSwaggerView):
    authentication_classes = StaffViewSet.authentication_classes
    permission_classes = StaffViewSet.permission_classes
    get_exception_handler = StaffViewSet.get_exception_handler
