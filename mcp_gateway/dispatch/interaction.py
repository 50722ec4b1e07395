"""Engine input requests ⇄ MCP 2026-07-28 multi round-trip results.

An engine's :class:`~engines_app.interaction.InputRequest` becomes an
``InputRequiredResult`` with one form elicitation and a ``requestState``
(sealed by :mod:`mcp_gateway.dispatch.request_state`). The client's retry brings the
elicitation's answer in ``inputResponses`` and the verified state back; that
becomes the engine's ``context.reply``. Clients that cannot answer (no
elicitation capability) get a tool error instead; the 2025 wires ask on the
call's SSE stream (:mod:`mcp_gateway.dispatch.asking`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engines_app.interaction import InputReply, InputRequest

INPUT_KEY = "input"
"""The sealed state's kind of an engine's round (the gateway's own
confirmation has another); the question's key on the wire is the engine's
``InputRequest.key``, sealed beside it."""


def can_ask(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client can answer an input request."""
    return client_can_answer(ctx.protocol_version, ctx.meta)


def client_can_answer(version: str, meta: Mapping[str, Any] | None) -> bool:
    """Whether a request at ``version`` with ``_meta`` can answer input requests."""
    if version not in MODERN_PROTOCOL_VERSIONS or not isinstance(meta, Mapping):
        return False
    capabilities = meta.get(types.CLIENT_CAPABILITIES_META_KEY)
    return isinstance(capabilities, Mapping) and "elicitation" in capabilities


def input_required(
    request: InputRequest, confirmed: Mapping[str, Any] | None = None
) -> types.InputRequiredResult:
    """Ask the client to fill the engine's form, then retry; ``confirmed``:
    the gateway's confirmation of this call, carried to the next round."""
    elicit = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=request.message, requested_schema=requested_schema(request)
        )
    )
    sealed: dict[str, Any] = {"k": INPUT_KEY, "q": request.key, "s": request.state}
    if confirmed is not None:
        sealed["c"] = dict(confirmed)
    state = json.dumps(sealed, separators=(",", ":"))
    return types.InputRequiredResult(
        input_requests={request.key: elicit}, request_state=state
    )


def requested_schema(request: InputRequest) -> dict[str, Any]:
    """The JSON Schema of the engine's form (an object of flat fields)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: dict(field) for name, field in request.fields.items()},
    }
    if request.required:
        schema["required"] = list(request.required)
    return schema


def reply_of(params: types.CallToolRequestParams) -> InputReply | None:
    """The caller's answer carried by a retry, or ``None`` on a first call.

    ``request_state`` has been verified and opened by the request-state
    boundary by now; answers without a state are refused, since nothing
    would show that this server asked the question.

    Raises:
        MCPError: -32602 for answers without a state, a state without an
            answer, or an answer of the wrong kind.
    """
    if params.request_state is None:
        if params.input_responses:
            raise _invalid("inputResponses need the requestState they answer.")
        return None
    key, engine_state = _engine_state(params.request_state)
    answer = (params.input_responses or {}).get(key)
    if not isinstance(answer, types.ElicitResult):
        raise _invalid("The retry must answer the elicitation it was asked.")
    return InputReply(
        action=answer.action, content=dict(answer.content or {}), state=engine_state
    )


def _engine_state(plaintext: str) -> tuple[str, str]:
    """The question's key and the engine's own state, from the opened state."""
    try:
        state = json.loads(plaintext)
    except ValueError:
        state = None
    if not isinstance(state, dict) or not isinstance(state.get("s"), str):
        raise _invalid("Invalid or expired requestState")
    key = state.get("q", INPUT_KEY)
    return (key if isinstance(key, str) else INPUT_KEY), str(state["s"])


def _invalid(message: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, message)
