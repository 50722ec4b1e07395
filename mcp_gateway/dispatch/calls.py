"""The steps of a ``tools/call``, whichever handler answers it.

Admission (audit record, rate limits, call quotas), the engine's context,
the run, and the record's outcome: one implementation each, used by the
gateway's own ``tools/call`` handler and by the SDK's (``sdk._call_tool``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from engines_app.context import EngineContext
from engines_app.interaction import Answer, Asked, Kind, Question
from mcp_gateway import jsonrpc
from mcp_gateway.audit import callrecord
from mcp_gateway.audit import log as audit
from mcp_gateway.catalog import CatalogEntry
from mcp_gateway.dispatch import asking, cancellation, interaction
from mcp_gateway.dispatch.era import Route
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.dispatch.wire import error_outcome
from mcp_gateway.engine_secrets import runtime as engine_secrets
from mcp_gateway.limits import quotas, ratelimit
from mcp_gateway.runtime import adapter, deadlines

Result = types.CallToolResult | types.InputRequiredResult


def admit(
    request_id: Any, params: Any, route: Route, scope: CallScope
) -> Outcome | None:
    """Start the call's audit record, then apply the rate limits (check 17)
    and the call quotas; ``None`` admits the call."""
    record = scope.record
    if record is not None:
        record.begin(request_id, params, route.version)
        record.outcome = callrecord.INVALID  # until a result says more
    limited = ratelimit.check(scope.tenant, scope.principal)
    if not limited.allowed:
        if limited.unavailable:
            return _unavailable(request_id, scope)
        return _refused(
            request_id,
            scope,
            callrecord.RATE_LIMITED,
            types.ErrorData(
                code=jsonrpc.SERVER_ERROR,
                message="Rate limit exceeded; retry later.",
                data={"retryAfter": limited.retry_after},
            ),
            limited.retry_after,
        )
    quota = quotas.check(scope.tenant, scope.principal)
    if quota.allowed:
        if record is not None and quota.charged:
            record.charged = quota.charged
        return None
    if quota.unavailable:
        return _unavailable(request_id, scope)
    message = f"Call quota for this {quota.period} used up; retry after it resets."
    data = {
        "code": quotas.CODE,
        "period": quota.period,
        "retryAfter": quota.retry_after,
    }
    return _refused(
        request_id,
        scope,
        callrecord.QUOTA,
        types.ErrorData(code=jsonrpc.SERVER_ERROR, message=message, data=data),
        quota.retry_after,
    )


def _unavailable(request_id: Any, scope: CallScope) -> Outcome:
    finish(scope, callrecord.FAILED, str(jsonrpc.SERVER_ERROR))
    return error_outcome(request_id, jsonrpc.unavailable(), 503)


def _refused(
    request_id: Any,
    scope: CallScope,
    outcome: str,
    error: types.ErrorData,
    retry_after: int,
) -> Outcome:
    finish(scope, outcome, str(error.code))
    refused = error_outcome(request_id, error, 429)
    return Outcome(429, refused.body, {"Retry-After": str(retry_after)})


def start(
    scope: CallScope,
    entry: CatalogEntry,
    arguments: Mapping[str, Any],
    answers: Mapping[str, Answer] | None = None,
    answerable: frozenset[Kind] = frozenset(),
) -> EngineContext:
    """The engine's context for this call; the record learns the engine.

    ``answerable``: the questions the caller can answer (:func:`answerable`)."""
    context = adapter.build_context(
        entry.engine,
        arguments,
        principal=scope.principal,
        config=scope.tenant.engine_config or {},
        deadline_seconds=deadlines.deadline_for(entry.engine),
        progress_sink=scope.progress_sink,
        log_sink=scope.log_sink,
        answers=answers,
        answerable=answerable,
    )
    record = scope.record
    if record is not None:
        record.engine_id = str(entry.engine.id)
        record.engine_version = str(getattr(entry.engine, "version", ""))
        record.arguments = audit.arguments_to_keep(scope.tenant, arguments)
    return context


def run(
    scope: CallScope,
    entry: CatalogEntry,
    arguments: Mapping[str, Any],
    context: EngineContext,
    *,
    wire: Wire | None = None,
    ask: adapter.Ask | None = None,
) -> types.CallToolResult:
    """Run the engine from sync code (WSGI), with its secrets, and record the
    outcome; on the 2025 wires (``wire``) a client's cancel reaches it, and
    on every wire a client gone away (``scope.client_gone``) cancels it.
    ``ask`` refuses an engine's question (``interaction.refuse``).

    Raises:
        deadlines.CallerGone: the client went away (recorded ``cancelled``).
        MCPError: ``ask`` refused a question (recorded ``invalid``).
        adapter.Deferred: ``ask`` deferred a question (the record stays
            open for :func:`arun` to finish).
    """
    gone = scope.client_gone
    try:
        with _watching(scope, wire, context) as running:
            try:
                result = engine_secrets.call(
                    entry.engine,
                    context,
                    lambda context: adapter.execute(
                        entry.engine, arguments, context, gone, ask
                    ),
                )
            except adapter.Deferred as deferred:
                if not cancellation.cancelled(running):
                    raise
                # Cancelled while it ran: ask nothing; the question is no
                # answer, as for a call that cannot be asked.
                result = adapter.to_result(entry.engine, deferred.asked)
    except deadlines.CallerGone:
        finish(scope, callrecord.CANCELLED)
        raise
    except MCPError as exc:
        finish(scope, callrecord.INVALID, str(exc.error.code))
        raise
    finish_result(scope, result, running)
    return result


async def arun(
    scope: CallScope,
    entry: CatalogEntry,
    arguments: Mapping[str, Any],
    context: EngineContext,
    ask: adapter.Ask | None = None,
    *,
    wire: Wire | None = None,
    asked: Asked | None = None,
) -> Result:
    """Run the engine from async code, with its secrets, and record the
    outcome (or the cancellation, when the client goes away or cancels).

    On a 2025 wire that can carry questions (``scope.elicit``), an engine's
    input request is asked on the call's stream (``asking``); ``asked`` is
    the question of a first run :func:`run` deferred (``adapter.Deferred``).

    Raises:
        MCPError: ``ask`` refused a question the client cannot answer
            (-32021, recorded ``invalid``).
    """
    elicit = _elicit(scope, wire) if ask is None else None
    try:
        with _watching(scope, wire, context) as running:
            result = await engine_secrets.acall(
                entry.engine,
                context,
                lambda context: adapter.aexecute(
                    entry.engine, arguments, context, ask, elicit, asked
                ),
            )
    except asyncio.CancelledError:
        finish(scope, callrecord.CANCELLED)
        raise
    except MCPError as exc:
        finish(scope, callrecord.INVALID, str(exc.error.code))
        raise
    finish_result(scope, result, running)
    return result


Wire = tuple[str, Any]
"""A call's protocol version and JSON-RPC request id."""


def _elicit(scope: CallScope, wire: Wire | None) -> adapter.Elicit | None:
    """Who asks on a 2025 wire's stream: ``scope.elicit``, for the kinds of
    question the call's revision defines (another is no answer)."""
    elicit = scope.elicit
    if wire is None or wire[0] not in asking.ASKING_VERSIONS or elicit is None:
        return None
    kinds = interaction.asking_kinds(wire[0])

    async def asked(question: Question, signal: Any) -> Any:
        if question.kind not in kinds:
            return None
        return await elicit(question, signal)

    return asked


def answerable(scope: CallScope, version: str, meta: Any) -> frozenset[Kind]:
    """The questions the caller of a call at ``version`` with ``_meta`` can
    answer: what it declared (2026-07-28), or what the call's SSE stream can
    ask (a 2025 wire whose client takes SSE), else none."""
    if version in asking.ASKING_VERSIONS:
        return interaction.asking_kinds(version) if scope.elicit else frozenset()
    return interaction.answerable(version, meta)


def _watching(
    scope: CallScope, wire: Wire | None, context: EngineContext
) -> contextlib.AbstractContextManager[cancellation.Running | None]:
    if wire is None:
        return contextlib.nullcontext()
    version, request_id = wire
    tenant_id = scope.tenant.pk
    return cancellation.watching(
        tenant_id, scope.principal, version, request_id, context.signal
    )


def finish(scope: CallScope, outcome: str, error_code: str = "") -> None:
    if scope.record is not None:
        scope.record.finish(outcome, error_code)


def finish_result(
    scope: CallScope, result: Result, running: cancellation.Running | None = None
) -> None:
    """Note a tool's result: its outcome and, for a tool error, its code; a
    call the client cancelled is ``cancelled`` whatever the engine said."""
    if scope.record is None:
        return
    if cancellation.cancelled(running):
        scope.record.finish(callrecord.CANCELLED)
        return
    code = ""
    if isinstance(result, types.CallToolResult) and result.is_error:
        first = result.content[0] if result.content else None
        text = first.text if isinstance(first, types.TextContent) else None
        code = callrecord.error_code_of(True, text)
    scope.record.finish(outcome_of(result), code)


def outcome_of(result: Result) -> str:
    """The audit outcome of an engine's result."""
    if not isinstance(result, types.CallToolResult):
        return callrecord.OK
    first = result.content[0] if result.content else None
    text = first.text if isinstance(first, types.TextContent) else None
    return callrecord.outcome_of(bool(result.is_error), text)
