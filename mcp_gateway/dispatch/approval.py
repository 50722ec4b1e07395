"""The gateway's own confirmation of a call to a tool that requires it.

Staff mark an exposure "requires confirmation"; before its engine runs,
:func:`check` decides:

- ``CALL_APPROVAL = "client"`` (the default), on 2026-07-28 with a client
  that can answer: an ``InputRequiredResult`` whose elicitation shows the
  exact arguments. Its ``requestState`` (sealed by the SDK's boundary,
  :mod:`request_state`) carries claims binding the tenant, the user, the
  token, the tool and a SHA-256 of the arguments' canonical JSON, with an
  expiry of ``REQUEST_STATE_TTL_SECONDS`` and a nonce: the confirming retry
  runs the engine once (the nonce is claimed in the shared cache); a
  declined one does not.
- On the 2025 wires, :func:`ask_on_2025` asks on the call's SSE stream (the
  back-channel of :mod:`asking`, under ASGI and WSGI); with none (a client
  that takes only JSON) the call is refused with a tool error saying the
  tool needs confirmation.
- ``CALL_APPROVAL = "staff"``: the call is parked for staff
  (:mod:`mcp_gateway.call_approvals`); the retry with the same arguments
  after staff approved it, within the TTL, runs once.

Refusals are tool errors (``isError``), not JSON-RPC errors: the model sees
why the tool did not run and can tell the user. Every ask, confirmation,
denial and expiry is an audit outcome.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.core.cache import caches
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engines_app.context import Signal
from engines_app.interaction import Answer, InputReply, InputRequest
from mcp_gateway import call_approvals
from mcp_gateway.audit import callrecord
from mcp_gateway.audit import log as audit
from mcp_gateway.audit.callrecord import CallRecord
from mcp_gateway.catalog import CatalogEntry
from mcp_gateway.conf import CALL_APPROVAL_STAFF, gateway_settings
from mcp_gateway.dispatch import asking, cancellation, interaction
from mcp_gateway.dispatch.scope import CallScope
from mcp_gateway.models import CallApproval
from mcp_gateway.runtime.adapter import tool_error
from mcp_gateway.runtime.deadlines import deadline_for
from mcp_gateway.runtime.loop import run_sync_outside_loop

logger = logging.getLogger("mcp_gateway")

CONFIRM_KEY = "confirm"
"""The key of the gateway's own ``inputRequests`` / ``inputResponses``, and
of its ``requestState``."""
UNAVAILABLE = "unavailable"
""":func:`ask_on_2025`'s answer when no back-channel can ask."""
USED_PREFIX = "mcpgw:confirmed:"
"""Shared-cache key prefix of a confirmation's nonce once its run is claimed."""
_SLACK_SECONDS = 5
CODE = "CONFIRMATION_REQUIRED"
DECLINED_CODE = "DECLINED"
PENDING_CODE = "APPROVAL_PENDING"
DENIED_CODE = "APPROVAL_DENIED"
EXPIRED_CODE = "APPROVAL_EXPIRED"
NEEDS_CONFIRMATION = (
    "This tool needs confirmation before it runs, which this client cannot "
    "give on this connection: call it on 2026-07-28 from a client that "
    "supports elicitation, or ask staff for an out-of-band approval."
)

Claims = dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """What :func:`check` decided: an answer instead of a run, or a run."""

    answer: types.CallToolResult | types.InputRequiredResult | None = None
    answers: Mapping[str, Answer] | None = None
    """The engine's own answers by key, on a later round (of a confirmed call)."""
    confirmed: Claims | None = None
    """The confirmation a later engine round carries in its state."""


async def check(
    ctx: ServerRequestContext[Any, Any],
    scope: CallScope,
    entry: CatalogEntry,
    params: types.CallToolRequestParams,
    arguments: Mapping[str, Any],
) -> Verdict:
    """Run, ask or refuse a call; only ``entry.confirm`` calls are asked."""
    if not entry.confirm:
        return _engine_round(params)
    _note(scope, entry, arguments)
    if gateway_settings().CALL_APPROVAL == CALL_APPROVAL_STAFF:
        return await run_sync_outside_loop(by_staff, scope, entry, arguments)
    if interaction.can_ask(ctx):
        return await _by_client(scope, entry, params, arguments)
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        asked = await ask_on_2025(ctx, scope, entry, arguments)
        if isinstance(asked, Verdict):
            return asked
    return _refuse(scope, callrecord.UNCONFIRMED, CODE, NEEDS_CONFIRMATION)


async def ask_on_2025(
    ctx: ServerRequestContext[Any, Any],
    scope: CallScope,
    entry: CatalogEntry,
    arguments: Mapping[str, Any],
) -> Verdict | str:
    """Ask the caller on a 2025 wire's back-channel (the call's SSE stream,
    :mod:`asking`), or :data:`UNAVAILABLE` where the call has none (a JSON
    answer, a revision without ``elicitation/create``), so the call is
    refused, never run unconfirmed.

    The question is :func:`question`'s elicitation (no ``requestState`` is
    needed on a live channel); no answer by the engine's deadline, or an
    error answer, is a decline. The client's ``notifications/cancelled``
    reaches the wait as it reaches an engine (:mod:`cancellation`).
    """
    if scope.elicit is None or ctx.protocol_version not in asking.ASKING_VERSIONS:
        return UNAVAILABLE
    message, schema = _form(entry, arguments)
    request = InputRequest(
        message=message, fields=schema["properties"], required=("confirm",)
    )
    seconds = deadline_for(entry.engine)
    signal = Signal(None if seconds is None else time.monotonic() + seconds)
    version, request_id = ctx.protocol_version, ctx.request_id
    tenant_id, principal = scope.tenant.pk, scope.principal
    try:
        with cancellation.watching(
            tenant_id, principal, version, request_id, signal
        ) as running:
            reply = await scope.elicit(request, signal)
        if not isinstance(reply, InputReply):
            reply = None
        if cancellation.cancelled(running):
            message = "The call was cancelled; the tool did not run."
            return _refuse(scope, callrecord.CANCELLED, "CANCELLED", message)
        if reply is None:
            reply = InputReply(action="cancel")
        answer = types.ElicitResult(action=reply.action, content=dict(reply.content))
        return await answered(scope, answer)
    except asyncio.CancelledError:  # the client went away while asked
        if scope.record is not None:
            scope.record.finish(callrecord.CANCELLED)
        raise


async def answered(scope: CallScope, answer: types.ElicitResult) -> Verdict:
    """The verdict of the caller's answer to :func:`question`: run, with a
    ``confirmed`` audit row first, or a ``DECLINED`` tool error."""
    if answer.action != "accept" or (answer.content or {}).get("confirm") is not True:
        message = "The call was not confirmed; the tool did not run."
        return _refuse(scope, callrecord.DECLINED, DECLINED_CODE, message)
    await _confirmed(scope)
    return Verdict()


# -- 2026-07-28: an InputRequiredResult the gateway itself asks ------------------


def claims_of(scope: CallScope, tool: str, arguments: Mapping[str, Any]) -> Claims:
    """What a confirmation is bound to (its expiry aside)."""
    principal = scope.principal
    return {
        "tenant": scope.tenant.pk,
        "user": principal.user,
        "token": principal.token,
        "tool": tool,
        "args": call_approvals.arguments_hash(arguments),
    }


def question(
    scope: CallScope, entry: CatalogEntry, arguments: Mapping[str, Any]
) -> types.InputRequiredResult:
    """The elicitation showing the exact arguments, with the bound state."""
    message, schema = _form(entry, arguments)
    elicit = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )
    claims = {
        **claims_of(scope, entry.tool.name, arguments),
        "exp": _expiry(),
        "n": secrets.token_urlsafe(18),  # the one run it confirms: _used_once
    }
    state = json.dumps({"k": CONFIRM_KEY, "c": claims}, separators=(",", ":"))
    return types.InputRequiredResult(
        input_requests={CONFIRM_KEY: elicit}, request_state=state
    )


def _form(entry: CatalogEntry, arguments: Mapping[str, Any]) -> tuple[str, Any]:
    """The confirmation's message (the exact arguments) and its schema."""
    shown = json.dumps(arguments, indent=2, sort_keys=True, ensure_ascii=False)
    name = entry.tool.name
    schema = {
        "type": "object",
        "properties": {
            "confirm": {"type": "boolean", "title": f"Run {name} with these arguments"}
        },
        "required": ["confirm"],
    }
    return f"Confirm the call to {name} with these arguments:\n{shown}", schema


async def _by_client(
    scope: CallScope,
    entry: CatalogEntry,
    params: types.CallToolRequestParams,
    arguments: Mapping[str, Any],
) -> Verdict:
    if params.request_state is None:  # answers without a state: ignored
        _finish(scope, callrecord.AWAITING)
        return Verdict(answer=question(scope, entry, arguments))
    state = _opened(params.request_state)
    claims = _verified(scope, entry, arguments, state)
    if state.get("k") != CONFIRM_KEY:  # a later round the engine asked
        return _engine_round(params, claims)
    responses = params.input_responses or {}
    if CONFIRM_KEY not in responses:  # asked again, afresh
        _finish(scope, callrecord.AWAITING)
        return Verdict(answer=question(scope, entry, arguments))
    answer = responses[CONFIRM_KEY]
    if not isinstance(answer, types.ElicitResult):
        raise _invalid("The retry must answer the elicitation it was asked.")
    if answer.action == "accept" and not await run_sync_outside_loop(
        _used_once, claims
    ):
        raise _invalid("This confirmation was already used; call the tool again.")
    verdict = await answered(scope, answer)
    if verdict.answer is not None:
        return verdict
    return Verdict(confirmed=claims)


def _engine_round(
    params: types.CallToolRequestParams, claims: Claims | None = None
) -> Verdict:
    """The engine's reply carried by a retry, or its questions asked again
    when the retry lacks an answer."""
    answers = interaction.answers_of(params)
    if isinstance(answers, types.InputRequiredResult):
        return Verdict(answer=answers)
    return Verdict(answers=answers, confirmed=claims)


def _opened(plaintext: str) -> dict[str, Any]:
    try:
        state = json.loads(plaintext)
    except ValueError:
        state = None
    if not isinstance(state, dict):
        raise _invalid("Invalid or expired requestState")
    return state


def _verified(
    scope: CallScope,
    entry: CatalogEntry,
    arguments: Mapping[str, Any],
    state: Mapping[str, Any],
) -> Claims:
    """The state's confirmation, when it is this call's and unexpired.

    Raises:
        MCPError: -32602 for a state without this call's confirmation.
    """
    claims = state.get("c")
    if not isinstance(claims, dict):
        raise _invalid("This call needs its own confirmation.")
    expected = claims_of(scope, entry.tool.name, arguments)
    if {k: v for k, v in claims.items() if k not in ("exp", "n")} != expected:
        raise _invalid("This confirmation is for another call.")
    if not isinstance(claims.get("n"), str):
        raise _invalid("This call needs its own confirmation.")
    expiry = claims.get("exp")
    if not isinstance(expiry, int | float) or not time.time() < expiry:
        _finish(scope, callrecord.EXPIRED, str(types.INVALID_PARAMS))
        raise _invalid("The confirmation expired; call the tool again.")
    return claims


def _used_once(claims: Claims) -> bool:
    """Claim the confirmation's one run in the shared cache: False when it
    was claimed before (a replayed confirmation), or cannot be claimed (the
    cache is down: refused, never run twice)."""
    settings = gateway_settings()
    timeout = settings.REQUEST_STATE_TTL_SECONDS + _SLACK_SECONDS
    try:
        cache = caches[settings.RATE_LIMIT_CACHE]
        return bool(cache.add(USED_PREFIX + claims["n"], 1, timeout))
    except Exception:
        logger.warning("Could not record a confirmation's use; it is refused.")
        return False


def _expiry() -> float:
    return time.time() + gateway_settings().REQUEST_STATE_TTL_SECONDS


async def _confirmed(scope: CallScope) -> None:
    """The audit row of the confirmation itself, before the run's own."""
    await run_sync_outside_loop(_record_confirmed, scope)


# -- CALL_APPROVAL = "staff": parked, then approved or denied in the admin ----------


def by_staff(
    scope: CallScope, entry: CatalogEntry, arguments: Mapping[str, Any]
) -> Verdict:
    """Park the call, or answer its retry as staff decided."""
    name = entry.tool.name
    digest = call_approvals.arguments_hash(arguments)
    parked = call_approvals.latest(scope.tenant, scope.principal, name, digest)
    state = CallApproval.State
    if parked is not None and parked.state == state.APPROVED:
        if call_approvals.take(parked):
            _record_confirmed(scope)
            return Verdict()
        if parked.is_expired:
            call_approvals.expire(parked)
            return _refuse(scope, callrecord.EXPIRED, EXPIRED_CODE, _expired())
    if parked is not None and parked.state in (state.PENDING, state.DENIED):
        if parked.is_expired:
            call_approvals.expire(parked)
            return _refuse(scope, callrecord.EXPIRED, EXPIRED_CODE, _expired())
        if parked.state == state.DENIED:
            message = "Staff denied this call; the tool did not run."
            return _refuse(scope, callrecord.DECLINED, DENIED_CODE, message)
        return _refuse(scope, callrecord.AWAITING, PENDING_CODE, _pending())
    engine_id = str(entry.engine.id)
    tenant, principal = scope.tenant, scope.principal
    call_approvals.park(tenant, principal, name, engine_id, arguments, digest)
    return _refuse(scope, callrecord.AWAITING, PENDING_CODE, _pending())


def _pending() -> str:
    seconds = round(gateway_settings().REQUEST_STATE_TTL_SECONDS)
    return (
        "This call awaits staff approval; the tool did not run. Once staff "
        "approve it, call the tool again with the same arguments within "
        f"{seconds} seconds."
    )


def _expired() -> str:
    return (
        "The approval of this call expired; the tool did not run. Call it "
        "again to ask staff anew."
    )


# -- Shared ----------------------------------------------------------------------


def _note(scope: CallScope, entry: CatalogEntry, arguments: Mapping[str, Any]) -> None:
    record = scope.record
    if record is not None:
        record.engine_id = str(entry.engine.id)
        record.engine_version = str(getattr(entry.engine, "version", ""))
        record.arguments = audit.arguments_to_keep(scope.tenant, arguments)


def _refuse(scope: CallScope, outcome: str, code: str, message: str) -> Verdict:
    _finish(scope, outcome, code)
    return Verdict(answer=tool_error(code, message))


def _finish(scope: CallScope, outcome: str, code: str = "") -> None:
    if scope.record is not None:
        scope.record.finish(outcome, code)


def _invalid(message: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, message)


# -- Staff's confirmation in the audit log ----------------------------------------


def _record_confirmed(scope: CallScope) -> None:
    """The ``confirmed`` audit row of a call the caller or staff confirmed,
    before its run's own."""
    record = scope.record
    if record is None:
        return
    confirmation = CallRecord(
        request_id=record.request_id,
        protocol_version=record.protocol_version,
        tool_name=record.tool_name,
        engine_id=record.engine_id,
        engine_version=record.engine_version,
        arguments=record.arguments,
    )
    confirmation.finish(callrecord.CONFIRMED)
    audit.record_call(confirmation, scope.tenant, scope.principal)
