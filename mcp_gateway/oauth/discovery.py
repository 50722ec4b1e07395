"""RFC 9728 protected resource metadata for each mount."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, ResolverMatch, get_script_prefix, resolve
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
    """The slug of the mount at ``resource_path``.

    The path is the mount's, relative to the script prefix (the link this
    site gives), or the mount's whole path with the prefix (RFC 9728's
    form, for a proxy that routes the host's well-known path here).
    """
    path = f"/{resource_path}"
    prefix = get_script_prefix()
    candidates = [path]
    if prefix != "/" and path.startswith(prefix):
        candidates.append("/" + path[len(prefix) :])
    for candidate in candidates:
        match = _resolve(candidate)
        if match is not None and match.view_name == "mcp_gateway:endpoint":
            return str(match.kwargs["slug"])
    raise Http404("No protected resource here.")


def _resolve(path: str) -> ResolverMatch | None:
    try:
        return resolve(path)
    except Resolver404:
        return None


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
