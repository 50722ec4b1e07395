from __future__ import annotations

from django.urls import path

from benchmarks.ceiling import limit

urlpatterns = [path("t/<slug:slug>/mcp", limit.endpoint)]
