from __future__ import annotations

from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import URLPattern, URLResolver, include, path

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("t/", include("mcp_gateway.urls")),
    path("api/", include("mcp_gateway.api.urls")),
    path("", include("mcp_gateway.urls.well_known")),
    path("metrics", include("mcp_gateway.urls.metrics")),
    path("", include("mcp_gateway.urls.health")),
]
# Static files only when DEBUG (the browser tests' live server); [] otherwise.
urlpatterns += staticfiles_urlpatterns()
