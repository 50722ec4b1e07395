"""RFC 9728 protected resource metadata for each mount."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.http import require_safe

from mcp_gateway.models import AuthorizationServer
from mcp_gateway.oauth.config import published_scopes
from mcp_gateway.oauth.resource import resource_url

CACHE_CONTROL = "public, max-age=300"


@require_safe
def protected_resource(request: HttpRequest, resource_path: str) -> HttpResponse:
    """The metadata of the mount at ``/<resource_path>``; 404 without one."""
    slug = _mount_slug(resource_path)
    servers = list(
        AuthorizationServer.objects.filter(
            tenant__slug=slug, tenant__is_active=True
        ).order_by("pk")
    )
    if not servers:
        raise Http404("No protected resource here.")
    response = JsonResponse(_document(slug, servers))
    response["Cache-Control"] = CACHE_CONTROL
    return response


def _mount_slug(resource_path: str) -> str:
    try:
        match = resolve(f"/{resource_path}")
    except Resolver404 as exc:
        raise Http404("No protected resource here.") from exc
    if match.view_name != "mcp_gateway:endpoint":
        raise Http404("No protected resource here.")
    return str(match.kwargs["slug"])


def _document(slug: str, servers: list[AuthorizationServer]) -> dict[str, object]:
    scopes: dict[str, None] = {}
    for server in servers:
        scopes.update(dict.fromkeys(published_scopes(server.scopes)))
    return {
        "resource": resource_url(slug),
        "authorization_servers": list(dict.fromkeys(s.issuer for s in servers)),
        "scopes_supported": list(scopes),
        "bearer_methods_supported": ["header"],
    }
