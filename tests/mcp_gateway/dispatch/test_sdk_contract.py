"""Pin the ``mcp`` SDK names ``mcp_gateway`` relies on, and the official client.

If an SDK upgrade renames or reshapes any of these, this file fails first.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import inspect
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx2
import mcp_types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.caching import CacheHint, apply_cache_hint
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.runner import serve_one
from mcp.shared.dispatcher import CallOptions, DispatchContext
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    InboundModernRoute,
    classify_inbound_request,
    find_invalid_x_mcp_header,
    validate_mcp_param_headers,
)
from mcp.shared.jsonrpc_dispatcher import (
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from engines_app.context import Principal
from mcp_gateway import bookkeeping
from mcp_gateway.catalog import Catalog, catalog_for, clear_cache
from mcp_gateway.dispatch.core import ahandle
from mcp_gateway.dispatch.exchange import SingleExchangeContext
from mcp_gateway.dispatch.scope import CallScope
from mcp_gateway.models import Tenant


def parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_sdk_is_pinned_to_2_3_0():
    assert importlib.metadata.version("mcp") == "2.3.0"
    assert importlib.metadata.version("mcp-types") == "2.3.0"


def test_serve_one_takes_what_protocol_passes():
    assert parameters(serve_one) == [
        "server",
        "dctx",
        "method",
        "params",
        "connection",
        "lifespan_state",
    ]
    assert inspect.iscoroutinefunction(serve_one)


def test_connection_from_envelope_takes_version_info_and_capabilities():
    params = parameters(Connection.from_envelope)

    assert params[:3] == ["protocol_version", "client_info", "client_capabilities"]


def test_server_takes_handlers_as_keyword_arguments_and_has_middleware():
    params = inspect.signature(Server).parameters

    assert {"name", "version", "on_list_tools", "on_call_tool"} <= set(params)
    assert isinstance(Server("pin").middleware, list)


def test_server_request_context_carries_the_transport_request():
    assert "request" in ServerRequestContext.__dataclass_fields__


def test_our_dispatch_context_satisfies_the_sdk_protocol():
    context: DispatchContext[TransportContext] = SingleExchangeContext(
        transport=TransportContext(kind="streamable-http", can_send_request=False),
        request_id=1,
        message_metadata=ServerMessageMetadata(request_context=None),
    )

    for name in ("transport", "request_id", "message_metadata", "cancel_requested"):
        assert hasattr(context, name)
    assert context.can_send_request is False
    with pytest.raises(NoBackChannelError):
        asyncio.run(context.send_raw_request("sampling/createMessage", None))
    assert MessageMetadata is not None
    assert CallOptions is not None


def test_transport_context_and_metadata_fields():
    assert {"kind", "can_send_request", "headers"} <= set(
        TransportContext.__dataclass_fields__
    )
    assert "request_context" in ServerMessageMetadata.__dataclass_fields__


def test_inbound_ladder_names_and_statuses():
    assert MCP_PROTOCOL_VERSION_HEADER == "mcp-protocol-version"
    assert parameters(classify_inbound_request)[:1] == ["body"]
    assert "headers" in parameters(classify_inbound_request)
    assert parameters(validate_mcp_param_headers) == [
        "input_schema",
        "arguments",
        "headers",
    ]
    assert parameters(find_invalid_x_mcp_header) == ["input_schema"]
    assert dict(ERROR_CODE_HTTP_STATUS) == {
        -32700: 400,
        -32600: 400,
        -32602: 400,
        -32020: 400,
        -32021: 400,
        -32022: 400,
        -32601: 404,
    }
    assert {"code", "message", "data"} <= set(
        InboundLadderRejection.__dataclass_fields__
    )
    assert {"protocol_version", "client_info", "client_capabilities"} <= set(
        InboundModernRoute.__dataclass_fields__
    )


def test_error_mapping_helpers():
    error = handler_exception_to_error_data(MCPError(-32602, "x"))

    assert error is not None
    assert error.code == -32602
    assert handler_exception_to_error_data(RuntimeError("x")) is None
    assert progress_token_from_params({"_meta": {"progressToken": "t"}}) == "t"


def test_cache_hint_fills_ttl_and_scope():
    result = apply_cache_hint(
        mcp_types.ListToolsResult(tools=[]), CacheHint(ttl_ms=5, scope="private")
    )

    assert result.ttl_ms == 5
    assert result.cache_scope == "private"


def test_versions_and_error_codes():
    assert MODERN_PROTOCOL_VERSIONS == ("2026-07-28",)
    assert LATEST_HANDSHAKE_VERSION == "2025-11-25"
    assert mcp_types.INVALID_PARAMS == -32602
    assert mcp_types.INVALID_REQUEST == -32600
    assert mcp_types.INTERNAL_ERROR == -32603
    assert mcp_types.PROTOCOL_VERSION_META_KEY == (
        "io.modelcontextprotocol/protocolVersion"
    )


def test_the_wire_models_we_build_exist_with_our_field_names():
    expected: dict[type[BaseModel], set[str]] = {
        mcp_types.Tool: {"name", "title", "description", "input_schema"},
        mcp_types.ToolAnnotations: {"read_only_hint", "open_world_hint"},
        mcp_types.Icon: {"src", "mime_type", "sizes"},
        mcp_types.CallToolResult: {"content", "structured_content", "is_error"},
        mcp_types.ImageContent: {"data", "mime_type"},
        mcp_types.AudioContent: {"data", "mime_type"},
        mcp_types.EmbeddedResource: {"resource"},
        mcp_types.TextResourceContents: {"uri", "mime_type", "text"},
        mcp_types.BlobResourceContents: {"uri", "mime_type", "blob"},
        mcp_types.ListToolsResult: {"tools", "ttl_ms", "cache_scope"},
    }
    for model, fields in expected.items():
        assert fields <= set(model.model_fields), model


# -- The official client against ``ahandle`` over in-process ASGI -------------

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def asgi_endpoint(tenant: Tenant, catalog: Catalog) -> Callable[..., Awaitable[None]]:
    """A bare stand-in for the view: JSON in, ``ahandle``, JSON out."""
    principal = Principal(tenant=tenant.slug, user="alice")

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        body = b""
        more = True
        while more:
            event = await receive()
            body += event.get("body", b"")
            more = event.get("more_body", False)
        status, payload = 405, b""
        if scope["method"] == "POST":
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            status, payload = await answer(json.loads(body), headers)
        start = {"type": "http.response.start", "status": status}
        start["headers"] = [(b"content-type", b"application/json")]
        await send(start)
        await send({"type": "http.response.body", "body": payload})

    async def answer(message: dict[str, Any], headers: dict[str, str]) -> Any:
        if "id" not in message:
            return 202, b""
        outcome = await ahandle(message, CallScope(tenant, catalog, principal, headers))
        return outcome.status, outcome.encoded or json.dumps(outcome.body).encode()

    return app


async def talk(
    tenant: Tenant, catalog: Catalog, mode: str
) -> tuple[str | None, list[str], Any]:
    transport = httpx2.ASGITransport(app=asgi_endpoint(tenant, catalog))
    http = httpx2.AsyncClient(transport=transport, base_url="http://testserver")
    async with http:
        url = "http://testserver/t/acme/mcp"
        client = Client(streamable_http_client(url, http_client=http), mode=mode)
        async with client:
            tools = await client.list_tools()
            result = await client.call_tool("demo_add", {"a": 2, "b": 5})
            return (
                client.session.protocol_version,
                [tool.name for tool in tools.tools],
                result.structured_content,
            )


@pytest.fixture
def client_tenant(db: None) -> Tenant:
    clear_cache()
    tenant = Tenant.objects.create(slug="client", name="Client")
    bookkeeping.expose(tenant, "demo.add")
    bookkeeping.expose(tenant, "demo.echo")
    tenant.refresh_from_db()
    return tenant


@pytest.mark.parametrize(
    ("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
)
def test_the_official_client_negotiates_and_calls(client_tenant, mode, version):
    negotiated, names, structured = asyncio.run(
        talk(client_tenant, catalog_for(client_tenant), mode)
    )

    assert negotiated == version
    assert names == ["demo_add", "demo_echo"]
    assert structured == {"sum": 7}
