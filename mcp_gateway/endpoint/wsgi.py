"""A WSGI wrapper that refuses what must never reach Django (``framing``).

A WSGI site wraps its application in it, as ``config/wsgi.py`` does:
``application = BoundaryGuard(get_wsgi_application())``. A request the
site's URLconf resolves to the endpoint's sync view skips the middleware
the mount has no use for (``wsgifast``) when the guard wraps Django's own
WSGI handler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from django.core.handlers.wsgi import WSGIHandler

from mcp_gateway.endpoint.framing import MISSING_HOST, lacks_host, refusal_body
from mcp_gateway.engine_secrets import store

if TYPE_CHECKING:
    from mcp_gateway.endpoint.wsgifast import MountPath

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class BoundaryGuard:
    def __init__(self, app: WSGIApp) -> None:
        self.app = app
        self.mount: MountPath | None = None
        if isinstance(app, WSGIHandler):  # the mount skips what it cannot use
            from mcp_gateway.endpoint.wsgifast import MountPath  # needs the apps

            self.mount = MountPath()
        store.startup_check()  # wrong secret keys: refuse to start
        from mcp_gateway.catalog import log_held_at_start  # needs the apps

        log_held_at_start()  # not in the first request

    def __call__(
        self, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        version = str(environ.get("SERVER_PROTOCOL", "")).removeprefix("HTTP/")
        if lacks_host(version, "HTTP_HOST" in environ):
            body = refusal_body(str(environ.get("PATH_INFO", "")), MISSING_HOST)
            start_response(
                "400 Bad Request",
                [
                    ("Content-Type", "application/json"),
                    ("Content-Length", str(len(body))),
                ],
            )
            return [body]
        if self.mount is not None and (handler := self.mount.handler_for(environ)):
            return handler(environ, start_response)
        return self.app(environ, start_response)
