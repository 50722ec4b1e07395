"""The API's routes; sites include this under ``api/``.

Engine ids contain dots and colons (``demo.echo``, ``demo:echo``), so the
``engine`` converter takes any text up to the next slash.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import path, re_path, register_converter

from mcp_gateway.api import openapi, views


class SegmentConverter:
    """Any text up to the next slash: engine ids, usernames, prefixes."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class TenantConverter(SegmentConverter):
    """A tenant slug; unlike Django's ``slug`` it shows in the schema."""

    regex = "[-a-zA-Z0-9_]+"


register_converter(SegmentConverter, "segment")
register_converter(TenantConverter, "tenant")

app_name = "mcp_gateway_api"

TENANT = "tenants/<tenant:slug>/"


def _openapi_view(name: str, **initkwargs: Any) -> Any:
    """The drf-spectacular view when it is enabled, else the JSON 404."""
    if not openapi.SPECTACULAR:
        return views.not_found
    from mcp_gateway.api import docs

    view = getattr(docs, name).as_view(**initkwargs)

    def serve(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not openapi.enabled():
            return views.not_found(request)
        response: HttpResponse = view(request, *args, **kwargs)
        return response

    serve.csrf_exempt = True  # type: ignore[attr-defined]  # as the view itself
    return serve


urlpatterns = [
    path("", views.RootViewSet.as_view({"get": "index"}), name="root"),
    path("schema/", _openapi_view("SchemaView"), name="schema"),
    path(
        "docs/",
        _openapi_view("DocsView", url_name="mcp_gateway_api:schema"),
        name="docs",
    ),
    path("engines/", views.EngineViewSet.as_view({"get": "list"}), name="engines"),
    path("audit/", views.ToolCallViewSet.as_view({"get": "list"}), name="audit"),
    path("usage/", views.UsageViewSet.as_view({"get": "list"}), name="usage"),
    path(
        "tenants/",
        views.TenantViewSet.as_view({"get": "list", "post": "create"}),
        name="tenants",
    ),
    path(
        TENANT,
        views.TenantViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="tenant",
    ),
    path(
        f"{TENANT}members/",
        views.MembershipViewSet.as_view({"get": "list", "post": "create"}),
        name="members",
    ),
    path(
        f"{TENANT}members/<segment:username>/",
        views.MembershipViewSet.as_view({"delete": "destroy"}),
        name="member",
    ),
    path(
        f"{TENANT}exposures/",
        views.ExposureViewSet.as_view({"get": "list", "post": "create"}),
        name="exposures",
    ),
    path(
        f"{TENANT}exposures/expose-all/",
        views.ExposureViewSet.as_view({"post": "expose_all"}),
        name="expose-all",
    ),
    path(
        f"{TENANT}exposures/<segment:engine_id>/",
        views.ExposureViewSet.as_view(
            {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
        ),
        name="exposure",
    ),
    path(
        f"{TENANT}exposures/<segment:engine_id>/approve/",
        views.ExposureViewSet.as_view({"post": "approve"}),
        name="approve",
    ),
    path(
        f"{TENANT}exposure-events/",
        views.ExposureEventViewSet.as_view({"get": "list"}),
        name="exposure-events",
    ),
    path(
        f"{TENANT}tokens/",
        views.ApiTokenViewSet.as_view({"get": "list", "post": "create"}),
        name="tokens",
    ),
    path(
        f"{TENANT}tokens/<segment:prefix>/",
        views.ApiTokenViewSet.as_view({"delete": "destroy"}),
        name="token",
    ),
    path(
        f"{TENANT}secrets/",
        views.EngineSecretViewSet.as_view({"get": "list", "post": "create"}),
        name="secrets",
    ),
    path(
        f"{TENANT}secrets/<segment:engine_id>/<segment:name>/",
        views.EngineSecretViewSet.as_view({"delete": "destroy"}),
        name="secret",
    ),
    # Anything else under api/ that ends with a slash: the JSON 404.
    re_path(r"^.*/$", views.not_found),
]
