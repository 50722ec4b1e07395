"""The MCP mount under WSGI without the middleware it has no use for.

Under WSGI a middleware hook is a plain call, not a thread hop as under
ASGI, but the reference project's seven middleware still cost a warm
``tools/list`` about a fifth of its CPU, and four of them do nothing on the
mount (``fastpath``: bearer tokens only, no session, no user, CSRF-exempt).

So :class:`MountPath` serves a request whose path the site's own URLconf
resolves to the endpoint's sync view through a Django WSGI handler of its
own (:class:`MountHandler`): Django's handler in every respect (the request
signals, the request class, exceptions made responses by the site's
handlers, ``django.request`` logging, the file wrapper), with a middleware
chain of the middleware the ASGI fast path replays (``SecurityMiddleware``,
``CommonMiddleware``, ``XFrameOptionsMiddleware``, in the site's order)
and without those it skips. Any other middleware in ``MIDDLEWARE`` turns it
off, as does ``MCP_GATEWAY["WSGI_FAST_PATH"] = False`` (env
``MCP_WSGI_FAST_PATH``): the mount then goes through the site's handler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.handlers.exception import convert_exception_to_response
from django.core.handlers.wsgi import WSGIHandler, get_path_info
from django.http import HttpRequest
from django.urls.resolvers import ResolverMatch
from django.utils.module_loading import import_string

from mcp_gateway.conf import gateway_settings
from mcp_gateway.endpoint.fastpath import replayed
from mcp_gateway.endpoint.framing import is_mount
from mcp_gateway.endpoint.serving import endpoint_match, is_sync_endpoint

MATCH = "mcp_gateway.match"
"""The environ key of the endpoint's match, resolved once per request."""


class MountHandler(WSGIHandler):
    """Django's WSGI handler with the replayed middleware only, resolving
    the request with the match :class:`MountPath` already made."""

    def __init__(self, middleware: Sequence[str]) -> None:
        self._replayed = middleware
        super().__init__()  # loads the middleware

    def load_middleware(self, is_async: bool = False) -> None:
        """Django's chain of ``self._replayed`` (sync, as under WSGI)."""
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        handler = convert_exception_to_response(self._get_response)  # type: ignore[attr-defined]
        for dotted in reversed(self._replayed):
            middleware = import_string(dotted)(handler)
            if hasattr(middleware, "process_view"):
                self._view_middleware.insert(0, middleware.process_view)
            if hasattr(middleware, "process_template_response"):
                self._template_response_middleware.append(
                    middleware.process_template_response
                )
            if hasattr(middleware, "process_exception"):
                self._exception_middleware.append(middleware.process_exception)
            handler = convert_exception_to_response(middleware)
        self._middleware_chain = handler

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        match = request.META.pop(MATCH, None)
        if match is None or hasattr(request, "urlconf"):
            return super().resolve_request(request)
        request.resolver_match = match
        return match  # type: ignore[no-any-return]


class MountPath:
    """Picks the handler for a WSGI request: the mount's, or none."""

    def __init__(self) -> None:
        self._for: object = None
        self._handler: MountHandler | None = None

    def handler_for(self, environ: dict[str, Any]) -> MountHandler | None:
        """The mount's handler if it serves this request (its match kept in
        ``environ``), else ``None``: the site's handler serves it."""
        if not gateway_settings().WSGI_FAST_PATH:
            return None
        path_info = get_path_info(environ)
        if not is_mount(path_info):
            return None
        handler = self._current()
        if handler is None:
            return None
        match = endpoint_match(path_info)
        if match is None or not is_sync_endpoint(match.func):
            return None
        environ[MATCH] = match
        return handler

    def _current(self) -> MountHandler | None:
        configured = settings.MIDDLEWARE
        if configured is not self._for:  # first use, or a test's override
            kept = replayed(configured, "WSGI")
            self._handler = None if kept is None else MountHandler(kept)
            self._for = configured
        return self._handler
