"""The ``mcp`` SDK's side of dispatch: its server, its handlers, ``serve_one``.

Each message the gateway's own handlers leave runs through
``mcp.server.runner.serve_one`` with a born-ready ``Connection`` for its
era. The handlers registered here answer through the same steps as the
gateway's own (``calls``); :func:`call_result` gives a ``CallToolResult``
the wire form the SDK would, so either handler answers alike.
"""

from __future__ import annotations

import functools
import importlib.metadata
import warnings
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheHint, apply_cache_hint
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.runner import serve_one
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engines_app.interaction import Answer, Kind
from mcp_gateway.catalog import CatalogEntry
from mcp_gateway.conf import gateway_settings
from mcp_gateway.dispatch import approval, calls, interaction, request_state
from mcp_gateway.dispatch.era import Route, negotiable
from mcp_gateway.dispatch.exchange import SingleExchangeContext
from mcp_gateway.dispatch.scope import CallScope
from mcp_gateway.runtime import adapter

CATALOG_VERSION_META_KEY = "io.github.django-mcp-gateway/catalogVersion"
"""``tools/list`` results carry the tenant's catalog version under this key."""


async def serve(
    route: Route,
    request_id: Any,
    method: str,
    params: Any,
    headers: dict[str, str],
    scope: CallScope,
) -> dict[str, Any]:
    """The SDK's result for one request (its exceptions are its errors)."""
    connection = Connection.from_envelope(
        route.version, route.client_info, route.client_capabilities
    )
    dctx = SingleExchangeContext(
        transport=TransportContext(
            kind="streamable-http", can_send_request=False, headers=headers
        ),
        request_id=request_id,
        message_metadata=ServerMessageMetadata(request_context=scope),
        progress_token=progress_token_from_params(
            params if isinstance(params, Mapping) else None
        ),
    )
    if not route.modern:
        params = negotiable(method, params)
    return await serve_one(
        sdk_server(gateway_settings().SERVER_NAME, listens=scope.listens),
        dctx,
        method,
        params,
        connection=connection,
        lifespan_state={},
    )


@functools.lru_cache(maxsize=8)
def sdk_server(name: str, *, listens: bool = False) -> Server[Any]:
    """The SDK server; ``listens``: the endpoint streams change notifications
    (ASGI), so ``tools.listChanged`` is advertised on every era."""
    handlers: dict[str, Any] = {}
    if listens:  # the stream itself is endpoint.listen's; this only advertises
        handlers["on_subscriptions_listen"] = _listen_elsewhere
    with warnings.catch_warnings():
        # Logging is deprecated at 2026-07-28 but still served on 2025 wires.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[Any] = (_ListeningServer if listens else Server)(
            name,
            version=_package_version(),
            on_list_tools=_list_tools,
            on_call_tool=_call_tool,
            on_set_logging_level=_set_logging_level,
            **handlers,
        )
    server.middleware = [request_state.Boundary(name)]
    return server


class _ListeningServer(Server[Any]):
    """Advertises ``tools.listChanged`` in the 2025 eras' ``initialize``."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


async def _listen_elsewhere(
    ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
) -> types.SubscriptionsListenResult:
    """Never reached: the endpoint serves ``subscriptions/listen`` itself."""
    raise MCPError(types.METHOD_NOT_FOUND, "Method not found")


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
) -> calls.Result:
    scope = _scope_of(ctx)
    entry = scope.catalog.get(params.name)
    if entry is None:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
    arguments = params.arguments if params.arguments is not None else {}
    verdict = await approval.check(ctx, scope, entry, params, arguments)
    if verdict.answer is not None:
        return verdict.answer
    version = ctx.protocol_version
    kinds = calls.answerable(scope, version, ctx.meta)
    context = calls.start(scope, entry, arguments, verdict.answers, kinds)
    wire = (version, ctx.request_id)
    if version not in MODERN_PROTOCOL_VERSIONS:
        return await calls.arun(scope, entry, arguments, context, wire=wire)
    asking = interaction.Asking(verdict.confirmed, kinds)  # a retry, or -32021
    result = await calls.arun(scope, entry, arguments, context, asking, wire=wire)
    answers = _answered_ahead(entry, params, asking, kinds)
    if answers is None:
        return result
    # Answered ahead: the engine runs again with them, as a retry would,
    # within the first run's deadline (its signal).
    context = adapter.with_answers(context, answers)
    return await calls.arun(scope, entry, arguments, context, asking, wire=wire)


def _answered_ahead(
    entry: CatalogEntry,
    params: types.CallToolRequestParams,
    asking: interaction.Asking,
    kinds: frozenset[Kind],
) -> dict[str, Answer] | None:
    """A first call's answers to the questions its engine just asked
    (``interaction.answered_ahead``); never a confirmation the gateway asks
    (``entry.confirm``: its answer comes with its own sealed state)."""
    if params.request_state is not None or entry.confirm or asking.asked is None:
        return None
    return interaction.answered_ahead(asking.asked, params.input_responses, kinds)


# -- The SDK's wire form of a tool result ---------------------------------------


def call_result(version: str, result: types.CallToolResult) -> dict[str, Any]:
    """The wire form the SDK gives a ``CallToolResult`` at ``version``."""
    dumped = _text_only(version, result)
    if dumped is None:
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        dumped = methods.serialize_server_result("tools/call", version, dumped)
    if version not in MODERN_PROTOCOL_VERSIONS:
        return dumped
    if dumped.get("resultType") is None:
        dumped["resultType"] = "complete"
    meta = dumped.get("_meta")
    if meta is None or (
        isinstance(meta, dict) and meta.get(types.SERVER_INFO_META_KEY) is None
    ):
        stamp = sdk_server(gateway_settings().SERVER_NAME).server_info_stamp
        dumped["_meta"] = {**(meta or {}), types.SERVER_INFO_META_KEY: stamp}
    return dumped


def _text_only(version: str, result: types.CallToolResult) -> dict[str, Any] | None:
    """The dump of a result of plain text blocks, built by hand, or ``None``.

    What the SDK's dump and per-revision sieve give such a result (every
    served revision keeps these members), without a pydantic round trip.
    """
    if result.meta is not None:
        return None
    blocks = []
    for block in result.content:
        if type(block) is not types.TextContent or block.annotations or block.meta:
            return None
        blocks.append({"type": "text", "text": block.text})
    dumped: dict[str, Any] = {"content": blocks, "isError": result.is_error}
    if result.structured_content is not None:
        dumped["structuredContent"] = result.structured_content
    if version in MODERN_PROTOCOL_VERSIONS:
        dumped["resultType"] = result.result_type
    return dumped
