"""Engine ⇄ MCP: build an engine's ``Tool``, run it into a ``CallToolResult``.

No engine ever sees an SDK object: engines get an ``EngineContext`` and return
JSON values or ``engines_app.results`` types; this module translates both ways.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from mcp.shared.inbound import find_invalid_x_mcp_header

from engines_app.context import (
    EngineContext,
    EngineRequest,
    LogSink,
    Principal,
    ProgressSink,
    Signal,
)
from engines_app.engine import Hints, Icon, is_async_engine
from engines_app.errors import EngineError
from engines_app.interaction import (
    Answer,
    Asked,
    InputRound,
    Kind,
    Question,
    is_asked,
    questions_of,
    single_reply,
)
from engines_app.results import Audio, Content, Image, Resource, RichResult, Text
from mcp_gateway.limits import concurrency
from mcp_gateway.naming import tool_name
from mcp_gateway.observability import tracing
from mcp_gateway.runtime import deadlines, simple_schema
from mcp_gateway.runtime.loop import run_in_thread_loop

logger = logging.getLogger("mcp_gateway")

DEFAULT_INPUT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
}
INPUT_UNAVAILABLE = (
    "This tool asks the caller for input (a confirmation, a form, its model or "
    "its roots), which is unavailable on this protocol version or was not "
    "answered; use 2026-07-28 with a client that declares the capability, or a "
    "2025 client that accepts SSE and answers it."
)
"""The tool error of an engine's input request no one can answer."""
_MAX_ERROR_TEXT = 300
_VALIDATOR_CACHE_SIZE = 1024


class InvalidToolError(Exception):
    """An engine cannot be published as a tool; the message names it."""


class _OutputSchemaViolation(Exception):
    """The engine's value breaks its declared output schema."""


# -- Tool definitions ------------------------------------------------------


def input_schema(engine: Any) -> dict[str, Any]:
    """Return the input schema the tool advertises and arguments must meet."""
    schema = getattr(engine, "input_schema", None)
    return dict(schema if schema is not None else DEFAULT_INPUT_SCHEMA)


def build_tool(engine: Any) -> types.Tool:
    """Describe ``engine`` as an MCP tool.

    Raises:
        InvalidToolError: an ``x-mcp-header`` annotation in the input schema
            breaks the 2026-07-28 rules, or the definition is malformed.
    """
    schema = input_schema(engine)
    reason = find_invalid_x_mcp_header(schema)
    if reason is not None:
        raise InvalidToolError(
            f"Engine {engine.id!r}: invalid x-mcp-header annotation ({reason})."
        )
    output = getattr(engine, "output_schema", None)
    try:
        return types.Tool(
            name=tool_name(engine.id),
            title=engine.name,
            description=engine.description,
            input_schema=schema,
            output_schema=dict(output) if output is not None else None,
            annotations=_annotations(getattr(engine, "hints", None)),
            icons=[_icon(icon) for icon in getattr(engine, "icons", ())] or None,
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise InvalidToolError(f"Engine {engine.id!r}: {exc}") from exc


def _annotations(hints: Hints | None) -> types.ToolAnnotations | None:
    if hints is None:
        return None
    said = (hints.read_only, hints.destructive, hints.idempotent, hints.open_world)
    if all(value is None for value in said):
        return None
    return types.ToolAnnotations(
        read_only_hint=hints.read_only,
        destructive_hint=hints.destructive,
        idempotent_hint=hints.idempotent,
        open_world_hint=hints.open_world,
    )


def _icon(icon: Icon) -> types.Icon:
    return types.Icon(
        src=icon.src, mime_type=icon.mime_type, sizes=list(icon.sizes) or None
    )


# -- Validators, cached per engine and schema identity -----------------------

_Validators = tuple[
    Draft202012Validator, Draft202012Validator | None, simple_schema.Check | None
]
_validators: dict[tuple[int, int, int], tuple[object, object, object, _Validators]] = {}


def _validators_for(engine: Any) -> _Validators:
    """Return compiled validators, kept while the engine and its schemas are.

    The key holds the identities of the engine and of both schema objects,
    and the entry keeps references to them, so an identity is never reused
    for another object while its entry lives.
    """
    schemas = (getattr(engine, "input_schema", None), engine_output_schema(engine))
    key = (id(engine), id(schemas[0]), id(schemas[1]))
    hit = _validators.get(key)
    if hit is not None and hit[0] is engine:
        return hit[3]
    if len(_validators) >= _VALIDATOR_CACHE_SIZE:
        _validators.clear()
    compiled = (
        Draft202012Validator(input_schema(engine)),
        Draft202012Validator(schemas[1]) if schemas[1] is not None else None,
        simple_schema.plain_check(input_schema(engine)),
    )
    _validators[key] = (engine, schemas[0], schemas[1], compiled)
    return compiled


def engine_output_schema(engine: Any) -> Mapping[str, Any] | None:
    schema: Mapping[str, Any] | None = getattr(engine, "output_schema", None)
    return schema


def _argument_error(engine: Any, arguments: Mapping[str, Any]) -> str | None:
    validator, _, plainly_valid = _validators_for(engine)
    if plainly_valid is not None and plainly_valid(arguments):
        return None
    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    pointer = "".join(f"/{part}" for part in error.absolute_path) or "/"
    text = f"Invalid arguments at {pointer}: {error.message}"
    return text[:_MAX_ERROR_TEXT]


# -- Context ----------------------------------------------------------------


def build_context(
    engine: Any,
    arguments: Mapping[str, Any],
    *,
    principal: Principal,
    config: Mapping[str, Any],
    deadline_seconds: float | None,
    progress_sink: ProgressSink | None = None,
    log_sink: LogSink | None = None,
    answers: Mapping[str, Answer] | None = None,
    answerable: frozenset[Kind] = frozenset(),
) -> EngineContext:
    """Build what the engine sees of this call; sinks default to dropping."""
    deadline = None if deadline_seconds is None else time.monotonic() + deadline_seconds
    sinks: dict[str, Any] = {}
    if progress_sink is not None:
        sinks["progress_sink"] = progress_sink
    if log_sink is not None:
        sinks["log_sink"] = log_sink
    if (span_opener := tracing.span_opener()) is not None:  # engines' own spans
        sinks["span_opener"] = span_opener
    return EngineContext(
        request=EngineRequest(strategy=engine.id, input=arguments),
        principal=principal,
        config=config,
        signal=Signal(deadline=deadline),
        reply=single_reply(answers or {}),
        answers=dict(answers or {}),
        answerable=answerable,
        **sinks,
    )


# -- Execution ----------------------------------------------------------------


class _Run:
    """The frame of one engine call, the same from sync and async code.

    Entering it applies the access rule and the input schema, opens the
    engine's span and takes the tenant's concurrency slot; ``result`` is set
    when that already answers (a refusal, ``BUSY``). Leaving it closes the
    span and the slot and turns every failure into a tool result
    (``TIMEOUT``, ``BUSY``, the engine's own error, ``EXECUTION_FAILED``).
    A cancellation is no failure: it passes through, as does a client gone
    away (``deadlines.CallerGone``).
    """

    def __init__(
        self, engine: Any, arguments: Mapping[str, Any], context: EngineContext
    ) -> None:
        self.engine = engine
        self.arguments = arguments
        self.context = context
        self.result: types.CallToolResult | types.InputRequiredResult | None = None
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> _Run:
        try:
            self.result = _refusal(self.engine, self.arguments, self.context.principal)
            if self.result is None:
                self._stack.enter_context(tracing.engine_span(self.engine))
                if not self._stack.enter_context(concurrency.lease(self.context)):
                    self.result = _busy()
        except Exception as exc:
            self._stack.close()
            self.result = _failed(self.engine, exc)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        suppressed = bool(self._stack.__exit__(kind, exc, traceback))
        if exc is None or suppressed:
            return suppressed
        if not isinstance(exc, Exception) or isinstance(exc, deadlines.CallerGone):
            return False  # a cancellation: the caller's to handle
        self.result = _failed(self.engine, exc)
        return True

    def answer(self) -> types.CallToolResult | types.InputRequiredResult:
        if self.result is None:  # never: every path through the frame sets it
            raise RuntimeError("The engine call ended without a result.")
        return self.result


def execute(
    engine: Any,
    arguments: Mapping[str, Any],
    context: EngineContext,
    client_gone: deadlines.ClientGone | None = None,
    ask: Ask | None = None,
) -> types.CallToolResult:
    """Run ``engine`` from sync code; every outcome is a tool result.

    A sync engine runs in the bounded engine pool until its deadline, as under
    :func:`aexecute`, but without an event loop, or until ``client_gone``
    says the client went away; an async engine runs on this thread's loop.
    A question is a tool error (no one to ask), or ``ask``'s to refuse.

    Raises:
        deadlines.CallerGone: the client went away while a sync engine ran.
        MCPError: ``ask``'s refusal of a question.
    """
    asked = None
    with _Run(engine, arguments, context) as run:
        if run.result is None:
            value = _run_blocking(engine, context, client_gone)
            if is_asked(value) and ask is not None:
                asked = value
            else:
                run.result = to_result(engine, value)
    result = ask(asked) if asked is not None and ask is not None else run.answer()
    if not isinstance(result, types.CallToolResult):  # never: nobody was asked
        raise TypeError("An input request from sync code.")
    return result


Ask = Callable[[Asked], types.InputRequiredResult]
"""Asks the caller by a result it answers by a retry; raises ``MCPError``
for a question it cannot answer (after the engine's frame is left), or
:class:`Deferred` to ask it later, during the call."""


class Deferred(Exception):
    """An engine's question from sync code, to be asked during the call by
    async code that runs on (:func:`aexecute` with ``asked``): a sync server
    can only write a question once its view has returned a stream."""

    def __init__(self, asked: Asked) -> None:
        super().__init__("An engine asked a question.")
        self.asked = asked


Elicit = Callable[[Question, Signal], Awaitable[Answer | None]]
"""Asks the caller during the call; ``None`` when no answer is available."""
MAX_INPUT_ROUNDS = 3
"""Questions an engine may ask during one call (``Elicit``)."""


async def aexecute(
    engine: Any,
    arguments: Mapping[str, Any],
    context: EngineContext,
    ask: Ask | None = None,
    elicit: Elicit | None = None,
    asked: Asked | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """Run ``engine`` without blocking the loop; ``asked`` is the question
    of a first run already made (:class:`Deferred`), asked before it runs on.

    Sync engines run in the bounded engine pool (``deadlines``) and may poll
    the context's signal, which is cancelled at the deadline or when the call
    is; async engines are stopped at the deadline. An engine's
    question goes to ``ask`` when the caller can answer it by a retry, or
    to ``elicit`` when it can answer during the call (the engine then runs
    again with the reply; a round's questions are asked one after
    another), else it is a tool error.

    Raises:
        MCPError: ``ask``'s refusal of a question the client cannot answer.
    """
    first, asked = asked, None
    with _Run(engine, arguments, context) as run:
        if run.result is None:
            value = await _acall(engine, context) if first is None else first
            if is_asked(value) and ask is not None:
                asked = value
            else:
                if elicit is not None:
                    value = await _elicited(engine, context, value, elicit)
                run.result = to_result(engine, value)
    if asked is not None and ask is not None:
        return ask(asked)
    return run.answer()


async def _elicited(
    engine: Any, context: EngineContext, value: Any, elicit: Elicit
) -> Any:
    """Answer the engine's questions, at most ``MAX_INPUT_ROUNDS``; an
    unanswered one stays a question (a tool error)."""
    for _ in range(MAX_INPUT_ROUNDS):
        if not is_asked(value):
            return value
        answers = await _answers(value, context, elicit)
        if answers is None:
            return value
        value = await _acall(engine, with_answers(context, answers))
    return value


def with_answers(
    context: EngineContext, answers: Mapping[str, Answer]
) -> EngineContext:
    """``context`` for the engine's next run: the answers by key, and a
    single form's or URL's as ``reply``; the same signal and deadline."""
    return dataclasses.replace(context, reply=single_reply(answers), answers=answers)


async def _answers(
    asked: Asked, context: EngineContext, elicit: Elicit
) -> dict[str, Answer] | None:
    """The caller's answer to each question, by key, asked in turn (a
    round's carry its state); ``None`` as soon as one is unavailable."""
    answers: dict[str, Answer] = {}
    for question in questions_of(asked):
        answer = await elicit(question, context.signal)
        if answer is None:
            return None
        if isinstance(asked, InputRound):
            answer = dataclasses.replace(answer, state=asked.state)
        answers[question.key] = answer
    return answers


def _failed(engine: Any, exc: Exception) -> types.CallToolResult:
    if isinstance(exc, deadlines.DeadlineExceeded):
        return _timeout()
    if isinstance(exc, deadlines.PoolFull):
        return _busy()
    return _failure(engine, exc)


def _run_blocking(
    engine: Any, context: EngineContext, client_gone: deadlines.ClientGone | None
) -> Any:
    """The engine's value, waited for here (no running loop in this thread)."""
    if is_async_engine(engine):
        value = run_in_thread_loop(_acall(engine, context))
    else:
        value = deadlines.run_sync(engine, context, client_gone)
    if inspect.isawaitable(value):
        value = run_in_thread_loop(_awaited(value))
    return value


def _timeout() -> types.CallToolResult:
    return tool_error("TIMEOUT", "The tool did not finish before its deadline.")


def _busy() -> types.CallToolResult:
    return tool_error("BUSY", "The server is busy; try again shortly.")


async def _acall(engine: Any, context: EngineContext) -> Any:
    if not is_async_engine(engine):
        value = await _run_sync(engine, context)
        return await value if inspect.isawaitable(value) else value
    with anyio.move_on_after(_remaining(context)):
        return await engine.execute(context)
    raise deadlines.DeadlineExceeded


async def _run_sync(engine: Any, context: EngineContext) -> Any:
    """Run a sync engine; when the call is cancelled, cancel its signal.

    A thread cannot be interrupted: the engine learns of the cancellation by
    polling its signal, and the cancellation completes once it returns.
    """
    running = asyncio.ensure_future(deadlines.arun_sync(engine, context))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        context.signal.cancel()
        await asyncio.wait({running})
        raise


async def _awaited(value: Any) -> Any:
    return await value


def _remaining(context: EngineContext) -> float:
    remaining = context.signal.remaining()
    return float("inf") if remaining is None else remaining


def _refusal(
    engine: Any, arguments: Mapping[str, Any], principal: Principal
) -> types.CallToolResult | None:
    access = getattr(engine, "access", None)
    if access is not None and (principal.is_anonymous or not access(principal)):
        return tool_error("FORBIDDEN", "You may not use this tool.")
    problem = _argument_error(engine, arguments)
    if problem is not None:
        return tool_error("INVALID_ARGUMENTS", problem)
    return None


def _failure(engine: Any, exc: Exception) -> types.CallToolResult:
    if isinstance(exc, EngineError):
        return tool_error(exc.code, exc.message)
    logger.exception("Engine %r failed", getattr(engine, "id", engine), exc_info=exc)
    return tool_error("EXECUTION_FAILED", "Tool execution failed.")


# -- Results ------------------------------------------------------------------


def tool_error(code: str, message: str) -> types.CallToolResult:
    """Return an ``isError`` result carrying ``{"code", "message"}`` as text."""
    text = _dumps({"code": code, "message": message})
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=True
    )


def to_result(engine: Any, value: Any) -> types.CallToolResult:
    """Translate an engine's return value into a ``CallToolResult``.

    Raises:
        _OutputSchemaViolation, TypeError, ValueError: the value breaks the
            declared output schema or is not JSON.
    """
    if isinstance(value, RichResult):
        return _rich_result(engine, value)
    if is_asked(value):
        return tool_error("INPUT_UNAVAILABLE", INPUT_UNAVAILABLE)
    text = _dumps(value)
    structured = value if isinstance(value, dict) else None
    _check_output(engine, value)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
    )


def _rich_result(engine: Any, value: RichResult) -> types.CallToolResult:
    if value.structured is not None:
        _dumps(value.structured)
    if not value.is_error:
        _check_output(engine, value.structured)
    return types.CallToolResult(
        content=[_content(block) for block in value.content],
        structured_content=value.structured,
        is_error=value.is_error,
    )


def _check_output(engine: Any, value: Any) -> None:
    validator = _validators_for(engine)[1]
    if validator is None:
        return
    error = best_match(validator.iter_errors(value))
    if error is not None:
        raise _OutputSchemaViolation(
            f"Engine {engine.id!r} output breaks its output_schema: {error.message}"
        )


def _content(block: Content) -> types.ContentBlock:
    if isinstance(block, Text):
        return types.TextContent(type="text", text=block.text)
    if isinstance(block, Image):
        return types.ImageContent(
            type="image", data=block.base64, mime_type=block.mime_type
        )
    if isinstance(block, Audio):
        return types.AudioContent(
            type="audio", data=block.base64, mime_type=block.mime_type
        )
    if isinstance(block, Resource):
        return types.EmbeddedResource(type="resource", resource=_resource(block))
    raise TypeError(f"Unknown content block {type(block).__name__}")


def _resource(
    block: Resource,
) -> types.TextResourceContents | types.BlobResourceContents:
    if block.blob is not None:
        blob = base64.b64encode(block.blob).decode("ascii")
        return types.BlobResourceContents(
            uri=block.uri, mime_type=block.mime_type, blob=blob
        )
    return types.TextResourceContents(
        uri=block.uri, mime_type=block.mime_type, text=block.text or ""
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
