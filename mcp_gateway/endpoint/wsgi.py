"""A WSGI wrapper that refuses what must never reach Django (``framing``).

A WSGI site wraps its application in it, as ``config/wsgi.py`` does:
``application = BoundaryGuard(get_wsgi_application())``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mcp_gateway.endpoint.framing import MISSING_HOST, lacks_host, refusal_body
from mcp_gateway.engine_secrets import store

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class BoundaryGuard:
    def __init__(self, app: WSGIApp) -> None:
        self.app = app
        store.startup_check()  # wrong secret keys: refuse to start

    def __call__(
        self, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        version = str(environ.get("SERVER_PROTOCOL", "")).removeprefix("HTTP/")
        if not lacks_host(version, "HTTP_HOST" in environ):
            return self.app(environ, start_response)
        body = refusal_body(str(environ.get("PATH_INFO", "")), MISSING_HOST)
        start_response(
            "400 Bad Request",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        )
        return [body]
