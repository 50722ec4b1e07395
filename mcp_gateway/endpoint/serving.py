"""One route, the right view for each request: async on an event loop.

Django runs a view the way it is written: an ``async def`` view under WSGI
would cost an event loop per request, a sync view under ASGI a thread hop
and no streaming. So the endpoint's URL pattern resolves, per request, to
the async view when it is resolved on a running event loop (Django's ASGI
handler resolves there) and to the sync view otherwise (WSGI), whatever was
imported first and whichever wrapper the site put around its application.
``MCP_GATEWAY["ASYNC_ENDPOINT"] = True`` / ``False`` forces either view; it
is read per request, since system checks do not run under gunicorn or
uvicorn.
"""

from __future__ import annotations

import asyncio
import re
import weakref

from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver, path
from django.urls.converters import DEFAULT_CONVERTERS, get_converters
from django.urls.exceptions import Resolver404
from django.urls.resolvers import ResolverMatch
from django.utils.translation import get_language

from mcp_gateway.conf import gateway_settings
from mcp_gateway.endpoint.aviews import aendpoint
from mcp_gateway.endpoint.views import endpoint
from mcp_gateway.observability.observe import observed

_ASYNC_VIEWS: set[object] = set()
"""The async views of every endpoint pattern (the ASGI fast path's test)."""
_SYNC_VIEWS: set[object] = set()
"""The sync views of every endpoint pattern (the WSGI fast path's test)."""


def is_async_endpoint(callback: object) -> bool:
    """Whether ``callback`` is the endpoint's async view (a resolved match's)."""
    return callback in _ASYNC_VIEWS


def is_sync_endpoint(callback: object) -> bool:
    """Whether ``callback`` is the endpoint's sync view (a resolved match's)."""
    return callback in _SYNC_VIEWS


KEPT_MATCHES = 1024
"""How many endpoint matches a URLconf keeps (then it starts over)."""
KEPT_PATH_LENGTH = 256
"""The longest path whose match is kept: a tenant's slug is at most 64
characters, and a client chooses the path before it is authenticated."""

_matches: weakref.WeakKeyDictionary[
    URLResolver, dict[tuple[str, bool, str | None], ResolverMatch]
] = weakref.WeakKeyDictionary()
_CONVERTER = re.compile(r"<(?:(?P<name>[^>:]+):)?[^>]+>")


def endpoint_match(path_info: str) -> ResolverMatch | None:
    """The site URLconf's match of ``path_info`` (``resolve()``'s) if it is
    an endpoint view, else ``None``.

    Resolving walks the URLconf's patterns on every request; the fast paths
    ask for the mount's path on each one, so an endpoint match is kept per
    URLconf (a new URLconf, or ``clear_url_caches()``, starts afresh), path,
    kind of view and active language (``i18n_patterns`` and translated
    routes resolve by it), when every converter in its route is Django's
    own (a site's converter may look things up) and the path is at most
    :data:`KEPT_PATH_LENGTH` long. The match is shared by the requests of
    its path: the views get its ``kwargs`` unpacked, and none of the
    middleware the fast paths replay has a ``process_view`` that could
    change them.
    """
    resolver = get_resolver()
    kept = _matches.get(resolver)
    if kept is None:
        kept = _matches.setdefault(resolver, {})
    language = get_language() if settings.USE_I18N else None
    key = (path_info, uses_async_endpoint(), language)
    match = kept.get(key)
    if match is not None:
        return match
    try:
        match = resolver.resolve(path_info)
    except Resolver404:
        return None
    if match.func not in _SYNC_VIEWS and match.func not in _ASYNC_VIEWS:
        return None
    if len(path_info) <= KEPT_PATH_LENGTH and _pure(match.route):
        if len(kept) >= KEPT_MATCHES:
            kept.clear()
        kept[key] = match
    return match


def _pure(route: str) -> bool:
    """Whether every converter of ``route`` is Django's own."""
    converters = get_converters()
    for found in _CONVERTER.finditer(route):
        name = found.group("name") or "str"
        if DEFAULT_CONVERTERS.get(name) is not converters.get(name):
            return False
    return True


def uses_async_endpoint() -> bool:
    """Whether this request is served by the async view."""
    configured = gateway_settings().ASYNC_ENDPOINT
    if configured is not None:
        return bool(configured)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class EndpointPattern(URLPattern):
    """A URL pattern with a sync and an async view, chosen when it resolves."""

    def __init__(self, route: str, name: str) -> None:
        sync = path(route, observed(endpoint), name=name)
        super().__init__(sync.pattern, sync.callback, name=name)
        _SYNC_VIEWS.add(sync.callback)
        self.async_pattern = path(route, observed(aendpoint), name=name)
        _ASYNC_VIEWS.add(self.async_pattern.callback)

    def resolve(self, path: str) -> ResolverMatch | None:
        if uses_async_endpoint():
            return self.async_pattern.resolve(path)
        return super().resolve(path)


def endpoint_pattern(route: str, name: str = "endpoint") -> EndpointPattern:
    """The endpoint's URL pattern (``mcp_gateway.urls`` mounts it)."""
    return EndpointPattern(route, name)
