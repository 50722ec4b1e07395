"""HTTP boundary checks of the MCP endpoint; each returns a refusal or None.

The view runs them in the order DESIGN.md gives; the first refusal answers.
Duplicate headers arrive joined with "," under both WSGI (gunicorn) and
ASGI (Django joins repeated headers), and no single valid value of the
headers checked here contains a comma, so a comma means "more than one".
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, cast

from django.http import HttpRequest, HttpResponse, JsonResponse

from mcp_gateway import jsonrpc
from mcp_gateway.conf import gateway_settings
from mcp_gateway.models import Tenant

JSON_TYPES = frozenset({"application/json", "application/*", "*/*"})


def error(
    status: int, code: int, message: str, id: Any = jsonrpc.NO_ID
) -> HttpResponse:
    """A JSON-RPC error body with an HTTP status."""
    return JsonResponse(jsonrpc.error_body(code, message, id), status=status)


def unavailable(id: Any = jsonrpc.NO_ID) -> HttpResponse:
    """503: the database, the cache or an authorization server is down."""
    return error(503, jsonrpc.SERVER_ERROR, jsonrpc.UNAVAILABLE, id)


def plain(status: int, message: str) -> HttpResponse:
    return error(status, jsonrpc.INVALID_REQUEST, message)


def check_origin(request: HttpRequest, tenant: Tenant | None) -> HttpResponse | None:
    origin = request.headers.get("Origin")
    if origin is None or origin.lower() in allowed_origins(request, tenant):
        return None
    return error(403, jsonrpc.INVALID_REQUEST, "Origin not allowed.")


def allowed_origins(request: HttpRequest, tenant: Tenant | None) -> set[str]:
    """The settings' and the tenant's origins, and the request's own origin.

    The request's own origin is safe to allow because its host has already
    passed ALLOWED_HOSTS, which is what stops DNS rebinding.
    """
    origins = {o.lower().rstrip("/") for o in gateway_settings().ALLOWED_ORIGINS}
    if tenant is not None:
        origins.update(str(o).lower().rstrip("/") for o in tenant.allowed_origins)
    origins.add(f"{request.scheme}://{request.get_host()}".lower())
    return origins


def raw_target(request: HttpRequest) -> str:
    """The request target as the client sent it, before any decoding."""
    scope = getattr(request, "scope", None)
    if scope is not None:  # ASGI
        raw = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string", b"")
        target = raw.decode("latin-1")
        return f"{target}?{query.decode('latin-1')}" if query else target
    raw_uri = request.META.get("RAW_URI")  # gunicorn
    if raw_uri is not None:
        return str(raw_uri)
    query = request.META.get("QUERY_STRING", "")
    return request.path + (f"?{query}" if query else "")


def check_target(
    request: HttpRequest, canonical_path: str, script_prefix: str = "/"
) -> HttpResponse | None:
    """The raw target must be the mount's canonical path, byte for byte.

    ``canonical_path`` is ``reverse()``'s, so it starts with the script
    prefix. A server that was given the prefix (gunicorn's ``SCRIPT_NAME``)
    sees it in the raw target; behind a proxy that strips it
    (``FORCE_SCRIPT_NAME``) the raw target is the path without it: both are
    the canonical path.
    """
    target = raw_target(request)
    if "?" in target or request.META.get("QUERY_STRING") or not target.startswith("/"):
        return plain(400, "The request target must be the bare endpoint path.")
    if target != canonical_path and target != _unprefixed(
        canonical_path, script_prefix
    ):
        return plain(404, "Not found.")
    return None


def _unprefixed(path: str, script_prefix: str) -> str:
    if script_prefix == "/" or not path.startswith(script_prefix):
        return path
    return "/" + path[len(script_prefix) :]


def check_method(request: HttpRequest) -> HttpResponse | None:
    if request.method == "POST":
        return None
    response = plain(405, "Method not allowed; use POST.")
    response["Allow"] = "POST"
    return response


def check_declared_length(request: HttpRequest) -> HttpResponse | None:
    declared = request.META.get("CONTENT_LENGTH") or ""
    if not declared:
        return None
    if not declared.isdigit():
        return plain(400, "Invalid Content-Length.")
    if int(declared) > gateway_settings().MAX_REQUEST_BYTES:
        return plain(413, "Request body too large.")
    return None


def check_authorization_syntax(request: HttpRequest) -> HttpResponse | None:
    if "," in request.headers.get("Authorization", ""):
        return plain(400, "More than one Authorization header.")
    return None


def bearer_token(request: HttpRequest) -> str | None:
    """The bearer token of the one Authorization header, if any."""
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


def check_content_type(request: HttpRequest) -> HttpResponse | None:
    if is_json_content_type(request.headers.get("Content-Type", "")):
        return None
    return plain(415, "Content-Type must be application/json.")


def is_json_content_type(value: str) -> bool:
    media, *params = (part.strip().lower() for part in value.split(";"))
    if media != "application/json" or "," in value:
        return False
    return all(p.replace('"', "") == "charset=utf-8" for p in params)


def check_accept(request: HttpRequest) -> HttpResponse | None:
    accept = request.headers.get("Accept", "").strip()
    if not accept or accepts_json(accept):
        return None
    return plain(406, "The response is application/json; Accept must admit it.")


def accepts_json(accept: str) -> bool:
    return accepts(accept, JSON_TYPES)


def accepts(accept: str, media_types: Collection[str]) -> bool:
    """Whether an ``Accept`` value admits one of ``media_types`` (q > 0)."""
    for item in accept.split(","):
        media, *params = (part.strip().lower() for part in item.split(";"))
        if media in media_types and _quality(params) > 0:
            return True
    return False


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


_BODY = "_mcp_gateway_body"
"""Where :func:`read_body` keeps the body it read on the request: a request
the ASGI view began on the loop and then serves in its thread
(``endpoint.onloop``) is admitted again there, and its stream is spent."""


def read_body(request: HttpRequest) -> bytes | HttpResponse:
    """Read at most the limit; a longer body (chunked, say) is a 413. A
    second read of the same request gives the body the first one read."""
    kept = getattr(request, _BODY, None)
    if kept is not None:
        return cast(bytes, kept)
    limit = gateway_settings().MAX_REQUEST_BYTES
    stream: Any = request
    if not request.META.get("CONTENT_LENGTH") and "wsgi.input" in request.META:
        stream = request.META["wsgi.input"]  # chunked: Django would read nothing
    try:
        body = stream.read(limit + 1)
    except Exception:  # the server's own errors (gunicorn: bad chunk sizes)
        return plain(400, "Malformed request body.")
    if len(body) > limit:
        return plain(413, "Request body too large.")
    body = bytes(body)
    setattr(request, _BODY, body)
    return body
