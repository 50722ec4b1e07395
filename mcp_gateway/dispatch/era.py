"""Which protocol revision a request speaks, and whether that may be served.

- 2026-07-28 (the ``MCP-Protocol-Version`` header, or a request carrying the
  ``_meta`` envelope): the SDK's inbound ladder (envelope, ``Mcp-Method`` /
  ``Mcp-Name`` / ``Mcp-Param-*`` headers, version), HTTP statuses from
  ``ERROR_CODE_HTTP_STATUS``.
- 2025-11-25 / 2025-06-18 / 2025-03-26 (no header means 2025-03-26):
  stateless ``initialize``; JSON-RPC errors are HTTP 200; an unsupported
  header is HTTP 400 with -32600.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.utils.datastructures import CaseInsensitiveMapping
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    InboundModernRoute,
    classify_inbound_request,
    validate_mcp_param_headers,
)
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from mcp_gateway.catalog import Catalog
from mcp_gateway.dispatch.versions import (
    DEFAULT_VERSION,
    HANDSHAKE_VERSIONS,
    SUPPORTED_VERSIONS,
)


@dataclass(frozen=True)
class Route:
    version: str
    modern: bool
    client_info: Any = None
    client_capabilities: Any = None


@dataclass(frozen=True)
class Rejection:
    status: int
    error: types.ErrorData


OWS = " \t"
"""Optional whitespace around an HTTP field value, not part of it."""


def lowered(headers: Mapping[str, str]) -> dict[str, str]:
    """The request's headers keyed by lower-case name, as the SDK reads them,
    each value without the whitespace around it (RFC 9110 5.5; uvicorn
    keeps it, gunicorn drops it)."""
    return {key.lower(): value.strip(OWS) for key, value in headers.items()}


def route_of(message: dict[str, Any], headers: Mapping[str, str]) -> Route | Rejection:
    """The request's revision from its headers (any case) and its envelope.

    A 2025 route reads only ``MCP-Protocol-Version``; the headers are
    lower-cased for the SDK's ladder only when the request is 2026-07-28.
    """
    header = version_header(headers)
    enveloped = _has_envelope(message.get("params"))
    if message["method"] == "initialize":
        enveloped = False  # the handshake never opens the modern era
    if header in HANDSHAKE_VERSIONS:
        return _legacy(header, enveloped)
    if header is None and not enveloped:
        return Route(DEFAULT_VERSION, modern=False)
    if header in MODERN_PROTOCOL_VERSIONS or enveloped:
        return _modern(message, lowered(headers))
    return _reject(400, types.INVALID_REQUEST, "Unsupported MCP-Protocol-Version.")


def version_header(headers: Mapping[str, str]) -> str | None:
    """``MCP-Protocol-Version`` from request headers in any case."""
    if isinstance(headers, CaseInsensitiveMapping):  # request.headers
        value = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        return None if value is None else str(value).strip(OWS)
    return lowered(headers).get(MCP_PROTOCOL_VERSION_HEADER)


def _legacy(version: str, enveloped: bool) -> Route | Rejection:
    if enveloped:
        return _reject(
            400,
            types.INVALID_REQUEST,
            "A request carrying the 2026-07-28 envelope needs that protocol version.",
        )
    return Route(version, modern=False)


def _modern(message: dict[str, Any], headers: Mapping[str, str]) -> Route | Rejection:
    verdict = classify_inbound_request(message, headers=headers)
    if isinstance(verdict, InboundLadderRejection):
        return _ladder_rejection(verdict)
    return _modern_route(verdict)


def _modern_route(verdict: InboundModernRoute) -> Route:
    return Route(
        verdict.protocol_version,
        modern=True,
        client_info=verdict.client_info,
        client_capabilities=verdict.client_capabilities,
    )


def param_header_check(
    route: Route,
    method: str,
    params: Any,
    headers: Mapping[str, str],
    catalog: Catalog,
) -> Route | Rejection:
    if method != "tools/call" or not isinstance(params, dict):
        return route
    name = params.get("name")
    entry = catalog.get(name) if isinstance(name, str) else None
    arguments = params.get("arguments")
    arguments = {} if arguments is None else arguments
    if entry is None or not isinstance(arguments, Mapping):
        return route  # dispatch answers unknown tools and bad arguments
    schema = entry.tool.input_schema
    verdict = validate_mcp_param_headers(schema, arguments, headers)
    return route if verdict is None else _ladder_rejection(verdict)


def _has_envelope(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, Mapping) and types.PROTOCOL_VERSION_META_KEY in meta


def negotiable(method: str, params: Any) -> Any:
    """Answer an ``initialize`` for an unserved revision with the latest one."""
    if method != "initialize" or not isinstance(params, dict):
        return params
    requested = params.get("protocolVersion")
    if not isinstance(requested, str) or requested in HANDSHAKE_VERSIONS:
        return params
    return {**params, "protocolVersion": LATEST_HANDSHAKE_VERSION}


def _reject(status: int, code: int, message: str) -> Rejection:
    data = {"supported": list(SUPPORTED_VERSIONS)}
    return Rejection(status, types.ErrorData(code=code, message=message, data=data))


def _ladder_rejection(rejection: InboundLadderRejection) -> Rejection:
    error = types.ErrorData(
        code=rejection.code, message=rejection.message, data=rejection.data
    )
    return Rejection(ERROR_CODE_HTTP_STATUS.get(rejection.code, 400), error)


def status_of(route: Route, error: types.ErrorData) -> int:
    """The HTTP status of a JSON-RPC error: 200 on 2025 wires."""
    return ERROR_CODE_HTTP_STATUS.get(error.code, 200) if route.modern else 200
