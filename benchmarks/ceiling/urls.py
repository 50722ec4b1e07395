from __future__ import annotations

from django.urls import path

from benchmarks.ceiling import views

urlpatterns = [path("t/<slug:slug>/mcp", views.endpoint)]
