"""Serve one parsed JSON-RPC request through the ``mcp`` SDK, statelessly.

Each request runs through ``mcp.server.runner.serve_one`` with a born-ready
``Connection`` for its era:

- 2026-07-28 (the ``MCP-Protocol-Version`` header, or a request carrying the
  ``_meta`` envelope): the SDK's inbound ladder (envelope, ``Mcp-Method`` /
  ``Mcp-Name`` / ``Mcp-Param-*`` headers, version), HTTP statuses from
  ``ERROR_CODE_HTTP_STATUS``.
- 2025-11-25 / 2025-06-18 / 2025-03-26 (no header means 2025-03-26):
  stateless ``initialize``; JSON-RPC errors are HTTP 200; an unsupported
  header is HTTP 400 with -32600.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.utils.datastructures import CaseInsensitiveMapping
from mcp.server import Server
from mcp.server.caching import CacheHint, apply_cache_hint
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.runner import serve_one
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    InboundModernRoute,
    classify_inbound_request,
    validate_mcp_param_headers,
)
from mcp.shared.jsonrpc_dispatcher import (
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from engines_app.context import EngineContext, LogSink, Principal, ProgressSink
from engines_app.interaction import InputReply
from mcp_gateway import (
    adapter,
    audit,
    callrecord,
    deadlines,
    interaction,
    jsonrpc,
    quotas,
    ratelimit,
    request_state,
)
from mcp_gateway.callrecord import CallRecord
from mcp_gateway.catalog import Catalog, CatalogEntry
from mcp_gateway.conf import gateway_settings
from mcp_gateway.dispatch_context import SingleExchangeContext, run_in_thread_loop
from mcp_gateway.models import Tenant

logger = logging.getLogger("mcp_gateway")

HANDSHAKE_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
"""Handshake-era revisions served; 2024-11-05 is not one of them."""
DEFAULT_VERSION = "2025-03-26"
"""The revision a request without ``MCP-Protocol-Version`` is served at."""
SUPPORTED_VERSIONS = (*HANDSHAKE_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
CATALOG_VERSION_META_KEY = "io.github.django-mcp-gateway/catalogVersion"
"""``tools/list`` results carry the tenant's catalog version under this key."""


@dataclass(frozen=True)
class CallScope:
    """What the view knows about the request."""

    tenant: Tenant
    catalog: Catalog
    principal: Principal
    headers: Mapping[str, str]
    progress_sink: ProgressSink | None = None
    log_sink: LogSink | None = None
    record: CallRecord | None = None
    """Filled in for a ``tools/call``; the view writes it to the audit log."""


@dataclass(frozen=True)
class Outcome:
    status: int
    body: dict[str, Any] | None
    headers: dict[str, str]
    encoded: bytes | None = None
    """``body`` already encoded as JSON, when the hot path built it so."""


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


# -- Public API -------------------------------------------------------------


def handle(message: dict[str, Any], scope: CallScope) -> Outcome:
    """Answer ``message`` from sync code (WSGI).

    Uses this thread's persistent event loop; sync engines run in this thread
    while the loop is stopped, so they may use the ORM.

    Raises:
        RuntimeError: called from a thread whose event loop is running.
    """
    with deadlines.request_thread():
        return run_in_thread_loop(_serve(message, scope))


async def ahandle(message: dict[str, Any], scope: CallScope) -> Outcome:
    """Answer ``message`` from async code (ASGI); sync engines use a thread."""
    return await _serve(message, scope)


# -- One exchange -------------------------------------------------------------


async def _serve(message: dict[str, Any], scope: CallScope) -> Outcome:
    if "id" not in message:
        return Outcome(202, None, {})
    try:
        return await _answer(message, scope)
    except Exception as exc:
        return error_outcome(message["id"], error_data(exc), 200)


async def _answer(message: dict[str, Any], scope: CallScope) -> Outcome:
    request_id = message["id"]
    method: str = message["method"]
    params = message.get("params")
    route = route_of(message, scope.headers)
    headers = lowered(scope.headers)
    if isinstance(route, Route) and route.modern:
        route = param_header_check(route, method, params, headers, scope.catalog)
    if isinstance(route, Rejection):
        return error_outcome(request_id, route.error, route.status)
    if method == "tools/call":
        refused = admit_call(request_id, params, route, scope)
        if refused is not None:
            return refused
    try:
        result = await _dispatch(route, request_id, method, params, headers, scope)
    except Exception as exc:
        error = error_data(exc)
        return error_outcome(request_id, error, _status(route, error))
    return Outcome(200, {"jsonrpc": "2.0", "id": request_id, "result": result}, {})


async def _dispatch(
    route: Route,
    request_id: Any,
    method: str,
    params: Any,
    headers: dict[str, str],
    scope: CallScope,
) -> dict[str, Any]:
    connection = Connection.from_envelope(
        route.version, route.client_info, route.client_capabilities
    )
    dctx = SingleExchangeContext(
        transport=TransportContext(
            kind="streamable-http", can_send_request=False, headers=headers
        ),
        request_id=request_id,
        message_metadata=ServerMessageMetadata(request_context=scope),
        progress_token=progress_token_from_params(_mapping(params)),
    )
    if not route.modern:
        params = _negotiable(method, params)
    return await serve_one(
        sdk_server(gateway_settings().SERVER_NAME),
        dctx,
        method,
        params,
        connection=connection,
        lifespan_state={},
    )


# -- Era routing ------------------------------------------------------------


def lowered(headers: Mapping[str, str]) -> dict[str, str]:
    """The request's headers keyed by lower-case name, as the SDK reads them."""
    return {key.lower(): value for key, value in headers.items()}


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
        return headers.get(MCP_PROTOCOL_VERSION_HEADER)
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


def _negotiable(method: str, params: Any) -> Any:
    """Answer an ``initialize`` for an unserved revision with the latest one."""
    if method != "initialize" or not isinstance(params, dict):
        return params
    requested = params.get("protocolVersion")
    if not isinstance(requested, str) or requested in HANDSHAKE_VERSIONS:
        return params
    return {**params, "protocolVersion": LATEST_HANDSHAKE_VERSION}


def _mapping(params: Any) -> Mapping[str, Any] | None:
    return params if isinstance(params, Mapping) else None


# -- Errors -----------------------------------------------------------------


def _reject(status: int, code: int, message: str) -> Rejection:
    data = {"supported": list(SUPPORTED_VERSIONS)}
    return Rejection(status, types.ErrorData(code=code, message=message, data=data))


def _ladder_rejection(rejection: InboundLadderRejection) -> Rejection:
    error = types.ErrorData(
        code=rejection.code, message=rejection.message, data=rejection.data
    )
    return Rejection(ERROR_CODE_HTTP_STATUS.get(rejection.code, 400), error)


def error_data(exc: Exception) -> types.ErrorData:
    error = handler_exception_to_error_data(exc)
    if error is not None:
        return error
    logger.exception("MCP request failed", exc_info=exc)
    return types.ErrorData(code=types.INTERNAL_ERROR, message="Internal error")


def _status(route: Route, error: types.ErrorData) -> int:
    return ERROR_CODE_HTTP_STATUS.get(error.code, 200) if route.modern else 200


def error_outcome(request_id: Any, error: types.ErrorData, status: int) -> Outcome:
    dumped = error.model_dump(mode="json", by_alias=True, exclude_none=True)
    body = {"jsonrpc": "2.0", "id": request_id, "error": dumped}
    return Outcome(status, body, {})


# -- The SDK server and its handlers -----------------------------------------


@functools.lru_cache(maxsize=4)
def sdk_server(name: str) -> Server[Any]:
    with warnings.catch_warnings():
        # Logging is deprecated at 2026-07-28 but still served on 2025 wires.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[Any] = Server(
            name,
            version=_package_version(),
            on_list_tools=_list_tools,
            on_call_tool=_call_tool,
            on_set_logging_level=_set_logging_level,
        )
    server.middleware = [request_state.Boundary(name)]
    return server


def _package_version() -> str:
    try:
        return importlib.metadata.version("django-mcp-gateway")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


def _scope_of(ctx: ServerRequestContext[Any, Any]) -> CallScope:
    scope = ctx.request
    if not isinstance(scope, CallScope):
        raise TypeError("The request context does not come from mcp_gateway.")
    return scope


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    scope = _scope_of(ctx)
    version = {CATALOG_VERSION_META_KEY: scope.catalog.version}
    result = types.ListToolsResult(tools=scope.catalog.tools(), _meta=version)
    hint = CacheHint(ttl_ms=gateway_settings().TOOLS_LIST_TTL_MS, scope="private")
    return apply_cache_hint(result, hint)


async def _set_logging_level(
    ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    """Accept any level: a stateless server cannot remember it for later."""
    return types.EmptyResult()


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    scope = _scope_of(ctx)
    entry = scope.catalog.get(params.name)
    if entry is None:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
    arguments = params.arguments if params.arguments is not None else {}
    reply = interaction.reply_of(params)
    context = engine_context(scope, entry, arguments, reply)
    ask = interaction.input_required if interaction.can_ask(ctx) else None
    note_engine(scope, entry, arguments)
    try:
        result = await adapter.aexecute(entry.engine, arguments, context, ask)
    except asyncio.CancelledError:
        finish(scope, callrecord.CANCELLED)
        raise
    finish(scope, result_outcome(result))
    return result


def engine_context(
    scope: CallScope,
    entry: CatalogEntry,
    arguments: Mapping[str, Any],
    reply: InputReply | None = None,
) -> EngineContext:
    return adapter.build_context(
        entry.engine,
        arguments,
        principal=scope.principal,
        config=scope.tenant.engine_config or {},
        deadline_seconds=deadlines.deadline_for(entry.engine),
        progress_sink=scope.progress_sink,
        log_sink=scope.log_sink,
        reply=reply,
    )


# -- Admission and audit of tools/call ----------------------------------------


def admit_call(
    request_id: Any, params: Any, route: Route, scope: CallScope
) -> Outcome | None:
    """Start the call's audit record, then apply the rate limits (check 17)."""
    if scope.record is not None:
        scope.record.begin(request_id, params, route.version)
        scope.record.outcome = callrecord.INVALID  # until a result says more
    verdict = ratelimit.check(scope.tenant, scope.principal)
    if verdict.allowed:
        return quotas.admit(request_id, scope)  # call quotas, after the limits
    if verdict.unavailable:
        finish(scope, callrecord.FAILED)
        return error_outcome(request_id, jsonrpc.unavailable(), 503)
    finish(scope, callrecord.RATE_LIMITED)
    error = types.ErrorData(
        code=jsonrpc.SERVER_ERROR,
        message="Rate limit exceeded; retry later.",
        data={"retryAfter": verdict.retry_after},
    )
    outcome = error_outcome(request_id, error, 429)
    return Outcome(429, outcome.body, {"Retry-After": str(verdict.retry_after)})


def note_engine(
    scope: CallScope, entry: CatalogEntry, arguments: Mapping[str, Any]
) -> None:
    record = scope.record
    if record is None:
        return
    record.engine_id = str(entry.engine.id)
    record.engine_version = str(getattr(entry.engine, "version", ""))
    record.arguments = audit.arguments_to_keep(scope.tenant, arguments)


def finish(scope: CallScope, outcome: str) -> None:
    if scope.record is not None:
        scope.record.finish(outcome)


def result_outcome(result: types.CallToolResult | types.InputRequiredResult) -> str:
    if not isinstance(result, types.CallToolResult):
        return callrecord.OK
    first = result.content[0] if result.content else None
    text = first.text if isinstance(first, types.TextContent) else None
    return callrecord.outcome_of(bool(result.is_error), text)
