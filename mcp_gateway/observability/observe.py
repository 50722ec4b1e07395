"""Where the request path meets metrics, traces and quotas.

Three hooks, each one line in the request path:

- :func:`observed` wraps the endpoint view: HTTP status and protocol
  version, auth failures, open SSE streams, and the request's span;
- :func:`admitted` runs once a request is authenticated and parsed: it
  names the request's tenant and starts its span (``_meta`` trace context);
- :func:`call_done` runs where a ``tools/call`` is recorded (every outcome
  goes through there): quota units of calls that ran no engine are given
  back, the outcome is counted and noted on the span.

With metrics and tracing off, :func:`observed` costs a settings read and a
provider read per request.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from django.http import HttpRequest, HttpResponseBase

from engines_app.context import Principal
from mcp_gateway.audit.callrecord import CallRecord
from mcp_gateway.dispatch.versions import SUPPORTED_VERSIONS
from mcp_gateway.limits import quotas
from mcp_gateway.models import Tenant
from mcp_gateway.observability import metrics, tracing

ATTRIBUTE = "_mcp_gateway_watch"
VERSION_HEADER = "MCP-Protocol-Version"
COUNTS_ITSELF = "mcp_gateway_counts_itself"
"""Set true on a streaming response whose maker keeps the open-streams gauge
itself (the change streams: their hub counts each one under its tenant)."""


class Watch:
    """What one request's metrics and span need."""

    __slots__ = ("count", "slug", "tenant", "trace")

    def __init__(self, slug: str, count: bool, trace: tracing.RequestTrace | None):
        self.slug = slug
        self.count = count
        self.trace = trace
        self.tenant = ""


def observed(view: Callable[..., Any]) -> Callable[..., Any]:
    """The endpoint ``view``, observed (sync or async as ``view`` is)."""
    if inspect.iscoroutinefunction(view):

        @functools.wraps(view)
        async def aobserved(
            request: HttpRequest, slug: str, **kwargs: Any
        ) -> HttpResponseBase:
            watch = _watch(request, slug)
            if watch is None:
                return await view(request, slug, **kwargs)  # type: ignore[no-any-return]
            token = tracing.current.set(watch.trace)
            try:
                response = await view(request, slug, **kwargs)
            except BaseException:
                _done(request, watch, 500, None)
                raise
            finally:
                tracing.current.reset(token)
            return _answered(request, watch, response)

        return aobserved

    @functools.wraps(view)
    def sobserved(request: HttpRequest, slug: str, **kwargs: Any) -> HttpResponseBase:
        watch = _watch(request, slug)
        if watch is None:
            return view(request, slug, **kwargs)  # type: ignore[no-any-return]
        token = tracing.current.set(watch.trace)
        try:
            response = view(request, slug, **kwargs)
        except BaseException:
            _done(request, watch, 500, None)
            raise
        finally:
            tracing.current.reset(token)
        return _answered(request, watch, response)

    return sobserved


def _watch(request: HttpRequest, slug: str) -> Watch | None:
    count = metrics.enabled()
    trace = tracing.start_request(request.headers)
    if not count and trace is None:
        return None
    watch = Watch(slug, count, trace)
    setattr(request, ATTRIBUTE, watch)
    return watch


def admitted(
    request: HttpRequest, tenant: Tenant, known: Any, message: dict[str, Any]
) -> None:
    """A request of ``tenant`` was authenticated and parsed (``known``: the
    tool names the caller may call)."""
    watch: Watch | None = getattr(request, ATTRIBUTE, None)
    if watch is None:
        return
    watch.tenant = tenant.slug
    if watch.trace is not None:
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        watch.trace.begin(
            message,
            tenant.slug,
            isinstance(name, str) and name in known,
            _version(request, message) or "2025-03-26",
        )


def wants_records(tenant: Tenant | None, principal: Principal | None = None) -> bool:
    """Whether calls need a record with the audit log off: for the metrics,
    the span, or to give back the quota units of a call that ran nothing."""
    return (
        metrics.enabled()
        or tracing.current.get() is not None
        or tenant is None
        or quotas.limited(tenant, principal)
    )


def call_done(record: CallRecord, tenant: Tenant) -> None:
    """A ``tools/call`` finished with ``record.outcome``."""
    outcome = record.outcome or ""
    quotas.settle(record.charged, outcome)
    if metrics.enabled():
        end = record.finished if record.finished is not None else record.started
        tool = record.tool_name if _known_tool(tenant, record.tool_name) else ""
        metrics.call_done(tenant.slug, tool, outcome, max(0.0, end - record.started))
    tracing.call_done(outcome)


def _known_tool(tenant: Tenant, name: str) -> bool:
    from mcp_gateway.catalog import cached

    catalog = cached(tenant)
    return catalog is not None and name in catalog


# -- The answer -----------------------------------------------------------------


def _answered(
    request: HttpRequest, watch: Watch, response: HttpResponseBase
) -> HttpResponseBase:
    status = response.status_code
    tenant = _tenant_label(watch, status)
    if watch.count:
        metrics.http_request(tenant, status, _version_label(request))
        reason = _auth_failure(response)
        if reason is not None:
            metrics.auth_failure(tenant, reason)
    if not response.streaming:
        _done(request, watch, status, _error_code(watch, response))
        return response
    count = watch.count and not getattr(response, COUNTS_ITSELF, False)
    if count:
        metrics.stream_opened(tenant, 1)

    def closed() -> None:
        if count:
            metrics.stream_opened(tenant, -1)
        if watch.trace is not None:
            watch.trace.finish(status, None)

    content = response.streaming_content  # type: ignore[attr-defined]
    if hasattr(content, "__aiter__"):
        response.streaming_content = _aclosing(content, closed)  # type: ignore[attr-defined]
    else:
        response.streaming_content = _closing(content, closed)  # type: ignore[attr-defined]
    return response


def _done(
    request: HttpRequest, watch: Watch, status: int, error_code: int | None
) -> None:
    if watch.trace is not None:
        watch.trace.finish(status, error_code)


async def _aclosing(
    content: AsyncIterator[bytes], closed: Callable[[], None]
) -> AsyncIterator[bytes]:
    try:
        async for chunk in content:
            yield chunk
    finally:
        closed()


def _closing(content: Iterator[bytes], closed: Callable[[], None]) -> Iterator[bytes]:
    try:
        yield from content
    finally:
        closed()


def _tenant_label(watch: Watch, status: int) -> str:
    """The tenant once known; a 401 or 403 is only ever a tenant's own."""
    if watch.tenant:
        return watch.tenant
    return watch.slug if status in (401, 403) else ""


def _auth_failure(response: HttpResponseBase) -> str | None:
    if response.status_code not in (401, 403):
        return None
    challenge = response.headers.get("WWW-Authenticate", "")
    if response.status_code == 401:
        return "invalid_token" if 'error="invalid_token"' in challenge else "missing"
    return "insufficient_scope" if "insufficient_scope" in challenge else None


def _version(request: HttpRequest, message: dict[str, Any] | None = None) -> str:
    header = request.headers.get(VERSION_HEADER)
    if header:
        return header
    params = message.get("params") if message else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict):
        from mcp_types import PROTOCOL_VERSION_META_KEY

        value = meta.get(PROTOCOL_VERSION_META_KEY)
        return value if isinstance(value, str) else ""
    return ""


def _version_label(request: HttpRequest) -> str:
    header = request.headers.get(VERSION_HEADER)
    if header is None:
        return "none"
    return header if header in SUPPORTED_VERSIONS else "other"


def _error_code(watch: Watch, response: HttpResponseBase) -> int | None:
    """The JSON-RPC error code of a JSON answer (read only when traced)."""
    if watch.trace is None or response.streaming:
        return None
    content: bytes = response.content  # type: ignore[attr-defined]
    if b'"error"' not in content or len(content) > 65_536:
        return None
    try:
        body = json.loads(content)
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) else None
