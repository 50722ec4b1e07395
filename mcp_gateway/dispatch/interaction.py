"""Engine questions ⇄ MCP requests and answers, for every era.

An engine's question (``engines_app.interaction``) maps to one MCP input
request: a form :class:`~engines_app.interaction.InputRequest` and a
:class:`~engines_app.interaction.UrlRequest` to ``elicitation/create``
(mode ``form`` / ``url``), a ``ModelRequest`` to ``sampling/createMessage``,
a ``RootsRequest`` to ``roots/list``; an ``InputRound`` to several, each
under the question's own key. :func:`wire_request` and :func:`answer_of`
are the mapping both eras use.

On 2026-07-28 the questions become an ``InputRequiredResult`` whose
``inputRequests`` are keyed by the engine's keys, with a ``requestState``
(sealed by :mod:`mcp_gateway.dispatch.request_state`) naming each key's
kind, the engine's state and the requests themselves. The client's retry
brings the answers in ``inputResponses`` and the verified state back; they
become the engine's ``context.reply``. A question the client did not
declare the capability for (``_meta`` client capabilities: ``elicitation``,
``elicitation.url``, ``sampling``, ``roots``) is the -32021 protocol error
naming what is missing. ``inputResponses`` on a first call (no
``requestState``) answer the engine's questions only when those carry no
engine state (nothing to verify), none is a confirmation or a URL, and
every key has an answer of its kind (:func:`answered_ahead`): the engine
then runs again with them, as a retry would, and extra keys are ignored;
otherwise they are ignored and the questions asked. A retry missing an
answer is asked again (the same requests, the same state, resealed: its
expiry is the round's first, so asking again never extends it). The 2025 wires
ask on the call's SSE stream (:mod:`mcp_gateway.dispatch.asking`).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from engines_app.interaction import (
    CONFIRM_FIELD,
    FORM,
    MODEL,
    ROOTS,
    URL,
    Answer,
    Asked,
    InputReply,
    InputRequest,
    Kind,
    ModelReply,
    ModelRequest,
    Question,
    Root,
    RootsReply,
    UrlRequest,
    questions_of,
)
from mcp_gateway.conf import gateway_settings

INPUT_KEY = "input"
"""The sealed state's kind of an engine's round (the gateway's own
confirmation has another)."""
URL_ELICITATION_VERSIONS = frozenset({"2025-11-25", *MODERN_PROTOCOL_VERSIONS})
"""The revisions that define elicitation's URL mode."""
MODERN_VERSION = max(MODERN_PROTOCOL_VERSIONS)
_REQUIRED: Mapping[Kind, dict[str, Any]] = {
    FORM: {"elicitation": {}},
    URL: {"elicitation": {"url": {}}},
    MODEL: {"sampling": {}},
    ROOTS: {"roots": {}},
}
"""The client capability each kind of question needs."""


def can_ask(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client can answer some input request."""
    return client_can_answer(ctx.protocol_version, ctx.meta)


def client_can_answer(version: str, meta: Mapping[str, Any] | None) -> bool:
    """Whether a request at ``version`` with ``_meta`` can answer input requests."""
    return bool(answerable(version, meta))


def answerable(version: str, meta: Mapping[str, Any] | None) -> frozenset[Kind]:
    """The kinds of question a 2026-07-28 request's client declared it answers."""
    if version not in MODERN_PROTOCOL_VERSIONS or not isinstance(meta, Mapping):
        return frozenset()
    capabilities = meta.get(types.CLIENT_CAPABILITIES_META_KEY)
    if not isinstance(capabilities, Mapping):
        return frozenset()
    kinds: set[Kind] = set()
    elicitation = capabilities.get("elicitation")
    if isinstance(elicitation, Mapping):
        # An empty elicitation capability is form mode (the 2025-06-18 shape).
        if "form" in elicitation or "url" not in elicitation:
            kinds.add(FORM)
        if "url" in elicitation:
            kinds.add(URL)
    if isinstance(capabilities.get("sampling"), Mapping):
        kinds.add(MODEL)
    if isinstance(capabilities.get("roots"), Mapping):
        kinds.add(ROOTS)
    return frozenset(kinds)


def asking_kinds(version: str) -> frozenset[Kind]:
    """What a 2025 wire's back-channel can ask (the client's capabilities
    are unknown to a stateless server: it asks, and an error is no answer)."""
    kinds: set[Kind] = {FORM, MODEL, ROOTS}
    if version in URL_ELICITATION_VERSIONS:
        kinds.add(URL)
    return frozenset(kinds)


def check_answerable(asked: Asked, kinds: frozenset[Kind]) -> None:
    """Refuse questions the client cannot answer.

    Raises:
        MCPError: -32021 (missing required client capability), its data's
            ``requiredCapabilities`` naming what is missing.
    """
    missing: dict[str, Any] = {}
    for question in questions_of(asked):
        if question.kind not in kinds:
            for name, value in _REQUIRED[question.kind].items():
                missing.setdefault(name, {}).update(value)
    if missing:
        names = ", ".join(sorted(missing))
        raise MCPError(
            types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"This tool needs the client capability it did not declare: {names}.",
            data={"requiredCapabilities": missing},
        )


def refuse(asked: Asked) -> types.InputRequiredResult:
    """:func:`input_required` for a client that declared it answers nothing.

    Raises:
        MCPError: -32021, always.
    """
    check_answerable(asked, frozenset())
    raise AssertionError("unreachable")  # pragma: no cover


def input_required(
    asked: Asked,
    confirmed: Mapping[str, Any] | None = None,
    *,
    kinds: frozenset[Kind],
) -> types.InputRequiredResult:
    """Ask the client the engine's questions, then retry; ``confirmed``: the
    gateway's confirmation of this call, carried to the next round.

    Raises:
        MCPError: -32021 for a question ``kinds`` (what the client declared)
            does not include.
    """
    check_answerable(asked, kinds)
    questions = questions_of(asked)
    requests = {q.key: wire_request(q, MODERN_VERSION) for q in questions}
    sealed: dict[str, Any] = {
        "k": INPUT_KEY,
        "q": {q.key: q.kind for q in questions},
        "s": asked.state,
        "r": {key: _dumped(request) for key, request in requests.items()},
        # The round's own expiry: asking it again reseals the state, which
        # must not extend it.
        "x": time.time() + gateway_settings().REQUEST_STATE_TTL_SECONDS,
    }
    if confirmed is not None:
        sealed["c"] = dict(confirmed)
    state = json.dumps(sealed, separators=(",", ":"))
    return types.InputRequiredResult(input_requests=dict(requests), request_state=state)


class Asking:
    """:func:`input_required` for one call (an ``adapter.Ask``), keeping what
    the engine asked (``asked``), so :func:`answered_ahead` can look at it."""

    def __init__(
        self, confirmed: Mapping[str, Any] | None, kinds: frozenset[Kind]
    ) -> None:
        self.confirmed = confirmed
        self.kinds = kinds
        self.asked: Asked | None = None

    def __call__(self, asked: Asked) -> types.InputRequiredResult:
        self.asked = asked
        return input_required(asked, self.confirmed, kinds=self.kinds)


def answered_ahead(
    asked: Asked,
    responses: Mapping[str, Any] | None,
    kinds: frozenset[Kind],
) -> dict[str, Answer] | None:
    """The answers a first call's ``inputResponses`` give ``asked``, by key,
    or ``None`` when they do not answer it all.

    Only questions without engine state qualify: a state must come back
    sealed (``requestState``), and a first call has none. A confirmation
    (a form with the ``confirm`` box, as ``engines_app.interaction.confirm``
    makes it, alone or with other fields) never does: the caller must have
    seen what it confirms; nor
    does a URL question, whose answer says the user agreed to open a URL
    they cannot have seen before it was asked. Each answer is checked as a
    retry's is (:func:`answer_of`); keys nothing asked are ignored.
    """
    if not responses or asked.state:
        return None
    answers: dict[str, Answer] = {}
    for question in questions_of(asked):
        if (
            question.kind not in kinds
            or question.kind == URL
            or _is_confirmation(question)
            or question.key not in responses
        ):
            return None
        answer = answer_of(question.kind, responses[question.key], "")
        if answer is None:
            return None
        answers[question.key] = answer
    return answers


def _is_confirmation(question: Question) -> bool:
    """A form with the ``confirm`` box, alone or among other fields."""
    return isinstance(question, InputRequest) and CONFIRM_FIELD in question.fields


def wire_request(question: Question, version: str) -> types.InputRequest:
    """The MCP request that asks ``question`` at protocol ``version``."""
    if isinstance(question, InputRequest):
        return types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=question.message, requested_schema=requested_schema(question)
            )
        )
    if isinstance(question, UrlRequest):
        elicitation_id = None
        if version not in MODERN_PROTOCOL_VERSIONS:  # required on 2025-11-25
            elicitation_id = secrets.token_urlsafe(12)
        return types.ElicitRequest(
            params=types.ElicitRequestURLParams(
                message=question.message,
                url=question.url,
                elicitation_id=elicitation_id,
            )
        )
    if isinstance(question, ModelRequest):
        return types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(
                        role=m.role, content=types.TextContent(type="text", text=m.text)
                    )
                    for m in question.messages
                ],
                max_tokens=question.max_tokens,
                system_prompt=question.system_prompt,
                temperature=question.temperature,
                stop_sequences=list(question.stop_sequences) or None,
            )
        )
    return types.ListRootsRequest(params=types.RequestParams())


def wire_params(question: Question, version: str) -> tuple[str, dict[str, Any]]:
    """The method and JSON params of ``question``'s request at ``version``."""
    dumped = _dumped(wire_request(question, version))
    return dumped["method"], dumped.get("params") or {}


def requested_schema(request: InputRequest) -> dict[str, Any]:
    """The JSON Schema of the engine's form (an object of flat fields)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: dict(field) for name, field in request.fields.items()},
    }
    if request.required:
        schema["required"] = list(request.required)
    return schema


def answer_of(kind: Kind, result: Any, state: str) -> Answer | None:
    """The engine's answer from a client's result to a question of ``kind``
    (a model, or its JSON); ``None`` when it is not such a result."""
    if isinstance(result, types.Result):
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if not isinstance(result, Mapping):
        return None
    try:
        if kind in (FORM, URL):
            elicited = types.ElicitResult.model_validate(result)
            content = dict(elicited.content or {}) if kind == FORM else {}
            return InputReply(action=elicited.action, content=content, state=state)
        if kind == MODEL:
            return _model_reply(result, state)
        roots = types.ListRootsResult.model_validate(result)
    except ValidationError:
        return None
    listed = tuple(Root(uri=str(root.uri), name=root.name) for root in roots.roots)
    return RootsReply(roots=listed, state=state)


def _model_reply(result: Mapping[str, Any], state: str) -> ModelReply:
    sampled = types.CreateMessageResultWithTools.model_validate(result)
    content = (
        sampled.content if isinstance(sampled.content, list) else [sampled.content]
    )
    text = "".join(c.text for c in content if isinstance(c, types.TextContent))
    return ModelReply(
        text=text,
        model=sampled.model,
        role=sampled.role,
        stop_reason=sampled.stop_reason,
        state=state,
    )


def answers_of(
    params: types.CallToolRequestParams,
) -> dict[str, Answer] | types.InputRequiredResult | None:
    """The caller's answers by key carried by a retry, ``None`` on a first call, or
    the same questions again when the retry lacks an answer.

    ``request_state`` has been verified and opened by the request-state
    boundary by now. ``inputResponses`` without a state are no retry's:
    nothing shows that this server asked what they answer (only
    :func:`answered_ahead` may take them, once the engine has asked).
    Answers under keys the state does not name are ignored.

    Raises:
        MCPError: -32602 for an opened state that is not an engine round's,
            or an answer of the wrong kind.
    """
    if params.request_state is None:
        return None
    opened = _opened(params.request_state)
    responses = params.input_responses or {}
    answers: dict[str, Answer] = {}
    for key, kind in opened.kinds.items():
        if key not in responses:
            return _asked_again(opened)
        answer = answer_of(kind, responses[key], opened.state)
        if answer is None:
            raise _invalid("The retry must answer the input requests it was asked.")
        answers[key] = answer
    return answers


class _Opened:
    """An engine round's state, opened."""

    def __init__(self, plaintext: str, state: dict[str, Any]) -> None:
        self.plaintext = plaintext
        self.state = str(state["s"])
        self.requests = state.get("r")
        asked = state.get("q", INPUT_KEY)
        if isinstance(asked, str):  # a single form, as states were sealed before
            asked = {asked: FORM}
        if not isinstance(asked, dict) or not asked:
            raise _invalid("Invalid or expired requestState")
        self.kinds: dict[str, Kind] = {}
        for key, kind in asked.items():
            if kind not in _REQUIRED:
                raise _invalid("Invalid or expired requestState")
            self.kinds[str(key)] = kind


def _opened(plaintext: str) -> _Opened:
    try:
        state = json.loads(plaintext)
    except ValueError:
        state = None
    if not isinstance(state, dict) or not isinstance(state.get("s"), str):
        raise _invalid("Invalid or expired requestState")
    expiry = state.get("x")
    if isinstance(expiry, int | float) and not time.time() < expiry:
        raise _invalid("Invalid or expired requestState")
    return _Opened(plaintext, state)


def _asked_again(opened: _Opened) -> types.InputRequiredResult:
    """The round's questions once more, under the same (resealed) state.

    Raises:
        MCPError: -32602 for a state sealed without its requests.
    """
    if not isinstance(opened.requests, dict) or opened.requests.keys() != set(
        opened.kinds
    ):
        raise _invalid("The retry must answer the input requests it was asked.")
    requests = {
        key: _request_model(kind, opened.requests[key])
        for key, kind in opened.kinds.items()
    }
    return types.InputRequiredResult(
        input_requests=requests, request_state=opened.plaintext
    )


def _request_model(kind: Kind, dumped: Any) -> types.InputRequest:
    try:
        if kind in (FORM, URL):
            return types.ElicitRequest.model_validate(dumped)
        if kind == MODEL:
            return types.CreateMessageRequest.model_validate(dumped)
        return types.ListRootsRequest.model_validate(dumped)
    except ValidationError:
        raise _invalid("Invalid or expired requestState") from None


def _dumped(request: types.InputRequest) -> dict[str, Any]:
    return request.model_dump(by_alias=True, mode="json", exclude_none=True)


def _invalid(message: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, message)
