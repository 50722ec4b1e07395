"""A span per MCP request, a child per engine run, trace context continued."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from engines_app.context import EngineContext
from engines_app.engine import Engine
from engines_app.registry import default_registry
from mcp_gateway import bookkeeping
from mcp_gateway.observability import tracing
from tests.rpc import post_rpc

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
META_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
META_PARENT_ID = "b7ad6b7169203331"


class Traced(Engine):
    id = "test.traced"
    name = "Traced"
    description = "Open a span of its own through the context."

    def execute(self, context: EngineContext) -> Any:
        with context.span("load rows", rows=3, source=["a"]), context.span("parse"):
            pass
        return {"done": True}


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with tracing.use_provider(provider):
        yield memory


@pytest.fixture
def traced_engine() -> Iterator[None]:
    default_registry.register(Traced())
    yield
    default_registry.unregister("test.traced")


def message(params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def by_name(exporter: InMemorySpanExporter) -> dict[str, Any]:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_a_call_is_a_server_span_with_an_engine_child_and_the_engines_own(
    exporter, traced_engine, client, tenant, token
):
    bookkeeping.expose(tenant, "test.traced")

    response = post_rpc(
        client, token, "tools/call", {"name": "test_traced", "arguments": {}}, id=7
    )

    assert response.status_code == 200
    spans = by_name(exporter)
    assert set(spans) == {
        "tools/call test_traced",
        "execute_tool test_traced",
        "load rows",
        "parse",
    }
    request = spans["tools/call test_traced"]
    engine = spans["execute_tool test_traced"]
    assert request.kind == SpanKind.SERVER
    assert request.parent is None
    assert dict(request.attributes) == {
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": "2025-11-25",
        "jsonrpc.protocol.version": "2.0",
        "jsonrpc.request.id": "7",
        "network.protocol.name": "http",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "test_traced",
        "mcp_gateway.tenant": "acme",
        "mcp_gateway.outcome": "ok",
        "http.response.status_code": 200,
    }
    assert request.status.status_code == StatusCode.UNSET
    assert engine.parent.span_id == request.context.span_id
    assert engine.attributes["mcp_gateway.engine.id"] == "test.traced"
    assert spans["load rows"].parent.span_id == engine.context.span_id
    assert spans["parse"].parent.span_id == spans["load rows"].context.span_id
    assert dict(spans["load rows"].attributes) == {"rows": 3, "source": "['a']"}
    assert len({s.context.trace_id for s in spans.values()}) == 1


def test_the_traceparent_header_is_continued(exporter, client, tenant, token):
    bookkeeping.expose(tenant, "demo.echo")

    client.post(
        "/t/acme/mcp",
        '{"jsonrpc":"2.0","id":1,"method":"tools/call",'
        '"params":{"name":"demo_echo","arguments":{"text":"x"}}}',
        content_type="application/json",
        headers={
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": "2025-11-25",
            "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01",
        },
    )

    request = by_name(exporter)["tools/call demo_echo"]
    assert format(request.context.trace_id, "032x") == TRACE_ID
    assert format(request.parent.span_id, "016x") == PARENT_ID
    assert request.parent.is_remote


def test_the_meta_trace_context_wins_over_the_header(exporter, client, tenant, token):
    bookkeeping.expose(tenant, "demo.echo")
    params = {
        "name": "demo_echo",
        "arguments": {"text": "x"},
        "_meta": {"traceparent": f"00-{META_TRACE_ID}-{META_PARENT_ID}-01"},
    }
    import json

    client.post(
        "/t/acme/mcp",
        json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        ),
        content_type="application/json",
        headers={
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": "2025-11-25",
            "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01",
        },
    )

    request = by_name(exporter)["tools/call demo_echo"]
    assert format(request.context.trace_id, "032x") == META_TRACE_ID
    assert format(request.parent.span_id, "016x") == META_PARENT_ID


def test_a_broken_meta_trace_context_falls_back_to_the_header(
    exporter, client, tenant, token
):
    bookkeeping.expose(tenant, "demo.echo")
    import json

    params = {
        "name": "demo_echo",
        "arguments": {"text": "x"},
        "_meta": {"traceparent": "not-a-traceparent"},
    }
    client.post(
        "/t/acme/mcp",
        json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        ),
        content_type="application/json",
        headers={
            "Authorization": f"Bearer {token}",
            "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01",
        },
    )

    request = by_name(exporter)["tools/call demo_echo"]
    assert format(request.context.trace_id, "032x") == TRACE_ID


def test_errors_mark_the_span(exporter, client, tenant, token):
    bookkeeping.expose(tenant, "demo.reject")

    post_rpc(client, token, "tools/call", {"name": "demo_reject", "arguments": {}})
    post_rpc(client, token, "tools/call", {"name": "nope", "arguments": {}})
    post_rpc(client, "mcp_bad_bad", "tools/list", None)

    spans = exporter.get_finished_spans()
    rejected, unknown, refused = spans[-3], spans[-2], spans[-1]
    assert rejected.name == "tools/call demo_reject"
    assert rejected.attributes["error.type"] == "tool_error"
    assert rejected.status.status_code == StatusCode.ERROR
    assert unknown.name == "tools/call"  # an unknown name is no span name
    assert unknown.attributes["gen_ai.tool.name"] == "nope"
    assert unknown.attributes["rpc.response.status_code"] == "-32602"
    assert unknown.attributes["mcp_gateway.outcome"] == "invalid"
    assert refused.attributes["http.response.status_code"] == 401
    assert refused.status.status_code == StatusCode.ERROR


def test_without_a_provider_nothing_is_traced(client, tenant, token):
    bookkeeping.expose(tenant, "demo.echo")

    assert tracing.provider() is None
    response = post_rpc(
        client, token, "tools/call", {"name": "demo_echo", "arguments": {"text": "x"}}
    )

    assert response.status_code == 200
    assert tracing.current.get() is None


def test_an_engine_context_span_is_a_no_op_when_not_traced():
    context = EngineContext(request=None, principal=None)  # type: ignore[arg-type]

    with context.span("anything", size=1) as opened:
        assert opened is None


def test_under_asgi_the_engine_span_is_a_child_too(
    exporter, traced_engine, tenant, token
):
    from asgiref.sync import async_to_sync
    from django.test import AsyncRequestFactory

    from mcp_gateway.endpoint.aviews import aendpoint
    from mcp_gateway.observability.observe import observed

    bookkeeping.expose(tenant, "test.traced")
    import json

    request = AsyncRequestFactory().post(
        "/t/acme/mcp",
        json.dumps(message({"name": "test_traced", "arguments": {}})),
        content_type="application/json",
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
            "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01",
        },
    )

    response = async_to_sync(observed(aendpoint))(request, "acme")

    assert response.status_code == 200
    spans = by_name(exporter)
    request_span = spans["tools/call test_traced"]
    assert format(request_span.context.trace_id, "032x") == TRACE_ID
    assert spans["execute_tool test_traced"].parent.span_id == (
        request_span.context.span_id
    )
    assert spans["load rows"].parent.span_id == (
        spans["execute_tool test_traced"].context.span_id
    )
    assert request_span.attributes["mcp_gateway.outcome"] == "ok"
