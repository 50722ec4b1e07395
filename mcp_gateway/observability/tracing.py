"""OpenTelemetry spans of MCP requests and engine runs.

The app uses the OpenTelemetry API alone; a site that wants traces installs
and configures an SDK the OpenTelemetry way (the ``otel`` extra, the
standard ``OTEL_*`` variables, ``opentelemetry-instrument``: see
docs/operations.md). Until a tracer provider is set, every hook here costs
one provider read and returns.

With one set, each request to the MCP endpoint is one ``SERVER`` span,
named ``{mcp.method.name} {gen_ai.tool.name}`` (the tool only when the
tenant has it) or ``{mcp.method.name}``, with the attributes of the
OpenTelemetry semantic conventions for MCP (``mcp.method.name``,
``mcp.protocol.version``, ``jsonrpc.request.id``, ``gen_ai.operation.name``,
``gen_ai.tool.name``, ``error.type``, ``rpc.response.status_code``) and the
gateway's own (``mcp_gateway.tenant``, ``mcp_gateway.outcome``). Its parent
is the W3C trace context of the request's ``_meta`` (where the 2026-07-28
revision carries it) when valid, else that of the HTTP headers
(``traceparent``, ``tracestate``, through the configured propagator). Each
engine run is a child span ``execute_tool {tool}``; an engine adds its own
spans under it with ``context.span(name, **attributes)``, without importing
OpenTelemetry.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanKind,
    StatusCode,
    TracerProvider,
)

INSTRUMENTATION = "mcp_gateway"
TENANT = "mcp_gateway.tenant"
OUTCOME = "mcp_gateway.outcome"
ENGINE = "mcp_gateway.engine.id"
ENGINE_VERSION = "mcp_gateway.engine.version"
_MAX_ATTRIBUTE = 200

_provider: list[TracerProvider] = []
"""A provider set by :func:`use_provider` (tests), before the global one."""

current: ContextVar[RequestTrace | None] = ContextVar(
    "mcp_gateway_request_trace", default=None
)


def provider() -> TracerProvider | None:
    """The configured tracer provider, or ``None`` when tracing is off."""
    configured = _provider[0] if _provider else trace.get_tracer_provider()
    if isinstance(configured, ProxyTracerProvider | NoOpTracerProvider):
        return None
    return configured


@contextlib.contextmanager
def use_provider(configured: TracerProvider) -> Iterator[None]:
    """Trace with ``configured`` instead of the global provider meanwhile."""
    _provider.insert(0, configured)
    try:
        yield
    finally:
        _provider.remove(configured)


class RequestTrace:
    """One MCP request's span, started once the request is understood."""

    def __init__(self, tracer: trace.Tracer, headers: Mapping[str, str]) -> None:
        self.tracer = tracer
        self.headers = headers
        self.started = time.time_ns()
        self.span: Span | None = None
        self.stack: list[Span] = []
        """The engine span, then the engine's own open spans."""
        self.outcome: str | None = None

    def begin(
        self,
        message: Mapping[str, Any],
        tenant: str,
        known_tool: bool,
        version: str,
    ) -> None:
        """Start the span for a parsed request of ``tenant``."""
        if self.span is not None:
            return
        method = message.get("method")
        params = message.get("params")
        method = method if isinstance(method, str) else ""
        attributes: dict[str, Any] = {
            "mcp.method.name": method[:_MAX_ATTRIBUTE],
            "mcp.protocol.version": version,
            "jsonrpc.protocol.version": "2.0",
            "network.protocol.name": "http",
            TENANT: tenant,
        }
        if "id" in message:
            attributes["jsonrpc.request.id"] = str(message["id"])[:_MAX_ATTRIBUTE]
        name = method[:_MAX_ATTRIBUTE] or "mcp"
        tool = params.get("name") if isinstance(params, Mapping) else None
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
            if isinstance(tool, str):
                attributes["gen_ai.tool.name"] = tool[:_MAX_ATTRIBUTE]
                if known_tool:
                    name = f"{method} {tool}"
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        self._start(name, attributes, _meta_context(meta))

    def _start(
        self, name: str, attributes: dict[str, Any], parent: Context | None
    ) -> Span:
        if parent is None:
            parent = propagate.extract(self.headers)
        self.span = self.tracer.start_span(
            name,
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            start_time=self.started,
        )
        return self.span

    def finish(self, status: int, error_code: int | None) -> None:
        """End the span with the HTTP status (and JSON-RPC error code)."""
        span = self.span or self._start("mcp", {"network.protocol.name": "http"}, None)
        span.set_attribute("http.response.status_code", status)
        failed = status >= 400
        if error_code is not None:
            span.set_attribute("rpc.response.status_code", str(error_code))
            span.set_attribute("error.type", str(error_code))
            failed = True
        if self.outcome is not None:
            span.set_attribute(OUTCOME, self.outcome)
            if self.outcome != "ok":
                span.set_attribute("error.type", self.outcome)
                failed = True
        elif status >= 400 and error_code is None:
            span.set_attribute("error.type", str(status))
        if failed:
            span.set_status(StatusCode.ERROR)
        span.end()

    def parent(self) -> Span | None:
        return self.stack[-1] if self.stack else self.span


def start_request(headers: Mapping[str, str]) -> RequestTrace | None:
    """A trace for a request to the MCP endpoint, or ``None`` when off."""
    configured = provider()
    if configured is None:
        return None
    return RequestTrace(configured.get_tracer(INSTRUMENTATION), headers)


def _meta_context(meta: Any) -> Context | None:
    """The trace context a request's ``_meta`` carries, when it is valid."""
    if not isinstance(meta, Mapping) or "traceparent" not in meta:
        return None
    carrier = {
        key: value
        for key in ("traceparent", "tracestate")
        if isinstance(value := meta.get(key), str)
    }
    try:
        context = propagate.extract(carrier)
    except (ValueError, TypeError):
        return None
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


def call_done(outcome: str) -> None:
    """Note the finished call's audit outcome on the request's span."""
    request = current.get()
    if request is not None:
        request.outcome = outcome


_UNTRACED = contextlib.nullcontext()


def engine_span(engine: Any) -> contextlib.AbstractContextManager[Any]:
    """The child span of one engine run (nothing when not traced)."""
    request = current.get()
    if request is None or request.span is None:
        return _UNTRACED
    return _engine_span(request, engine)


@contextlib.contextmanager
def _engine_span(request: RequestTrace, engine: Any) -> Iterator[None]:
    from mcp_gateway.naming import tool_name

    engine_id = str(getattr(engine, "id", ""))
    try:
        name = tool_name(engine_id)
    except Exception:  # a name the catalog would refuse: the engine id
        name = engine_id
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        ENGINE: engine_id,
        ENGINE_VERSION: str(getattr(engine, "version", "")),
    }
    with _child(request, f"execute_tool {name}", attributes):
        yield


@contextlib.contextmanager
def _child(
    request: RequestTrace, name: str, attributes: Mapping[str, Any]
) -> Iterator[Span]:
    parent = request.parent()
    context = trace.set_span_in_context(parent) if parent is not None else None
    span = request.tracer.start_span(
        name, context=context, kind=SpanKind.INTERNAL, attributes=attributes
    )
    request.stack.append(span)
    try:
        yield span
    except BaseException as exc:
        span.record_exception(exc)
        span.set_status(StatusCode.ERROR, type(exc).__qualname__)
        raise
    finally:
        if request.stack and request.stack[-1] is span:
            request.stack.pop()
        span.end()


def span_opener() -> Any:
    """What ``EngineContext.span`` opens for this request, or ``None``."""
    request = current.get()
    if request is None or request.span is None:
        return None

    def opener(name: str, attributes: Mapping[str, Any]) -> Any:
        return _child(request, str(name)[:_MAX_ATTRIBUTE], _plain(attributes))

    return opener


def _plain(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes OpenTelemetry takes: scalars kept, anything else as text."""
    return {
        str(key): value
        if isinstance(value, str | bool | int | float)
        else str(value)[:_MAX_ATTRIBUTE]
        for key, value in attributes.items()
    }
