"""The dispatcher: one message, routed by era and method, answered once.

Every request takes the same steps, each implemented once:

1. a notification is accepted (202);
2. the era: ``era.route_of`` and, on 2026-07-28, the ``Mcp-Param-*``
   headers; a refusal is answered;
3. a ``tools/call`` is admitted (``calls.admit``: audit record, rate limits,
   call quotas);
4. the handler is chosen (:func:`select`): the gateway's own for a plain
   ``tools/list`` (the SDK's answer, encoded once per catalog and revision)
   and a plain ``tools/call`` (``calls.start`` / ``calls.run``, the result
   in the SDK's wire form); the SDK's ``serve_one`` for everything else
   (another method, an error to word, a retry carrying ``requestState``, a
   client that can answer an input request), whose ``tools/call`` handler
   uses the same ``calls`` steps.

:func:`prepare` does steps 1-4 as plain sync code (no await: the rate-limit
cache is the only I/O); :func:`handle` (sync code, WSGI) and :func:`ahandle`
(async code, ASGI) only run what it chose: the engine (in the pool, or
awaited) or ``serve_one`` (on this thread's loop, or awaited).

Under ASGI the request's thread may answer at once what never waits
(:func:`answer_here`: a sync engine declared ``blocking = False``, a kept
``tools/list`` answer), in the hop that admitted the request; the rest is
:class:`Later`, for the loop (:func:`arest`).
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.core.exceptions import SynchronousOnlyOperation
from django.db import DatabaseError
from mcp.shared.exceptions import MCPError

from engines_app.context import EngineContext
from engines_app.engine import is_async_engine
from mcp_gateway import jsonrpc
from mcp_gateway.catalog import Catalog, CatalogEntry
from mcp_gateway.conf import gateway_settings
from mcp_gateway.dispatch import asking, calls, era, interaction, sdk
from mcp_gateway.dispatch.era import Rejection, Route
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.dispatch.wire import (
    encode,
    encoded_result,
    error_data,
    error_outcome,
    result_outcome,
)
from mcp_gateway.runtime import adapter, deadlines
from mcp_gateway.runtime.loop import run_in_thread_loop

LIST = "tools/list"
""":func:`select`'s answer for a plain ``tools/list``."""
_LIST_KEYS = frozenset({"_meta", "cursor"})
_CALL_KEYS = frozenset({"_meta", "name", "arguments"})


@dataclass(frozen=True)
class Call:
    """A plain ``tools/call`` the gateway's own handler runs."""

    entry: CatalogEntry
    arguments: Mapping[str, Any]
    context: EngineContext


@dataclass(frozen=True)
class Step:
    """A request routed and admitted, with the handler that answers it."""

    request_id: Any
    method: str
    params: Any
    route: Route
    call: Call | None = None
    """Set when the gateway runs the engine itself."""
    listing: bool = False
    """A plain ``tools/list``: the answer is kept, encoded, for the next one."""


# -- The drivers ------------------------------------------------------------------


def handle(
    message: dict[str, Any], scope: CallScope, *, through_sdk: bool = False
) -> Outcome:
    """Answer ``message`` from sync code (WSGI).

    A sync engine runs in the pool without an event loop; the SDK runs on
    this thread's persistent loop, where sync engines run in this thread
    while the loop is stopped, so they may use the ORM. ``through_sdk``
    leaves every request to the SDK (the test that both answer alike).

    Raises:
        DatabaseError: the database failed during admission.
        RuntimeError: called from a thread whose event loop is running.
    """
    answer = handle_asking(message, scope, through_sdk=through_sdk)
    if isinstance(answer, Pending):
        with deadlines.request_thread():
            return run_in_thread_loop(answer.rest)
    return answer


@dataclass(frozen=True)
class Pending:
    """The rest of a call, for the sync caller to run on its thread's loop
    in steps (``loop.Resumable``): it may ask the client (``scope.elicit``)."""

    rest: Coroutine[Any, Any, Outcome]


def handle_asking(
    message: dict[str, Any], scope: CallScope, *, through_sdk: bool = False
) -> Outcome | Pending:
    """:func:`handle` for a sync server that can ask the client of a 2025
    call on an SSE stream (``scope.elicit``): a plain call runs here, and
    only when its engine asks is the rest :class:`Pending`, as is a call
    the SDK answers (a confirmation asks before the engine runs).

    Raises:
        DatabaseError: the database failed during admission.
        deadlines.CallerGone: the client went away while the engine ran.
    """
    step = prepare(message, scope, through_sdk=through_sdk)
    if isinstance(step, Outcome):
        return step
    if step.call is not None:
        ran = _run_here(step, scope, step.call)
        if isinstance(ran, Later):
            return Pending(_asking(step, scope, step.call, ran.asked))
        return ran
    listed = _listed(step, scope)
    if listed is not None:
        return listed
    return Pending(_remembered(step, scope))


async def _asking(step: Step, scope: CallScope, call: Call, asked: Any) -> Outcome:
    """A plain call whose engine asked: ask, and run it on with the answer."""
    wire = (step.route.version, step.request_id)
    result = await calls.arun(
        scope, call.entry, call.arguments, call.context, wire=wire, asked=asked
    )
    return _called(step, result)


async def _remembered(step: Step, scope: CallScope) -> Outcome:
    return _remember(step, scope, await _by_sdk(step, scope))


def _ask_sync(step: Step, scope: CallScope) -> adapter.Ask | None:
    """:func:`_refuse`, or on a 2025 wire whose stream can ask, a deferral."""
    if scope.elicit is not None and step.route.version in asking.ASKING_VERSIONS:
        return _defer
    return _refuse(step)


def _defer(asked: Any) -> Any:
    raise adapter.Deferred(asked)


async def ahandle(
    message: dict[str, Any], scope: CallScope, *, through_sdk: bool = False
) -> Outcome:
    """Answer ``message`` from async code (ASGI); sync engines use a thread,
    and progress and log lines reach the scope's sinks.

    Raises:
        DatabaseError: the database failed during admission.
    """
    step = prepare(message, scope, through_sdk=through_sdk)
    if isinstance(step, Outcome):
        return step
    return await _arun(step, scope)


async def _arun(step: Step, scope: CallScope) -> Outcome:
    if step.call is not None:
        call = step.call
        wire = (step.route.version, step.request_id)
        try:
            result = await calls.arun(
                scope,
                call.entry,
                call.arguments,
                call.context,
                _refuse(step),
                wire=wire,
            )
        except MCPError as exc:
            return _refused(step, exc)
        return _called(step, result)
    listed = _listed(step, scope)
    if listed is not None:
        return listed
    return _remember(step, scope, await _by_sdk(step, scope))


@dataclass(frozen=True)
class Later:
    """A request :func:`answer_here` prepared but left to the loop."""

    step: Step
    asked: Any = None
    """The question a sync engine asked in its first run, to ask on the
    call's stream before it runs on (``adapter.Deferred``)."""


def answer_here(message: dict[str, Any], scope: CallScope) -> Outcome | Later:
    """:func:`ahandle`'s answer, from an async server's request thread
    (sync code), when it needs no waiting: the steps before any waiting, a
    sync engine declared ``blocking = False`` (as :func:`ahandle` runs it on
    the loop, inline), a kept ``tools/list`` answer. Anything else (an
    engine that waits or is async, the SDK's answer, an engine's question
    on a 2025 stream) is :class:`Later`: :func:`arest` runs it on.

    Raises:
        DatabaseError: the database failed during admission.
    """
    step = prepare(message, scope)
    if isinstance(step, Outcome):
        return step
    call = step.call
    if call is None:
        listed = _listed(step, scope)
        return Later(step) if listed is None else listed
    if is_async_engine(call.entry.engine) or deadlines.blocks(call.entry.engine):
        return Later(step)
    return _run_here(step, scope, call)


def _run_here(step: Step, scope: CallScope, call: Call) -> Outcome | Later:
    """Run a plain call from sync code: its answer, or (``Later``) the
    question its engine asked, to ask during the call (``adapter.Deferred``)."""
    wire = (step.route.version, step.request_id)
    try:
        result = calls.run(
            scope,
            call.entry,
            call.arguments,
            call.context,
            wire=wire,
            ask=_ask_sync(step, scope),
        )
    except MCPError as exc:
        return _refused(step, exc)
    except adapter.Deferred as deferred:
        return Later(step, deferred.asked)
    return _called(step, result)


async def arest(later: Later, scope: CallScope) -> Outcome:
    """Answer what :func:`answer_here` left to the loop."""
    step = later.step
    if later.asked is not None and step.call is not None:
        return await _asking(step, scope, step.call, later.asked)
    return await _arun(step, scope)


def _refuse(step: Step) -> adapter.Ask | None:
    """On 2026-07-28 a plain call's client declared it answers no question:
    an engine's question is -32021 (``interaction.refuse``)."""
    return interaction.refuse if step.route.modern else None


def _refused(step: Step, exc: MCPError) -> Outcome:
    error = exc.error
    return error_outcome(step.request_id, error, era.status_of(step.route, error))


# -- The steps before any waiting --------------------------------------------------


def prepare(
    message: dict[str, Any], scope: CallScope, *, through_sdk: bool = False
) -> Step | Outcome:
    """Route and admit ``message``; the answer when that decides it."""
    if "id" not in message:
        return Outcome(202, None, {})
    request_id = message["id"]
    try:
        return _prepare(message, request_id, scope, through_sdk)
    except (DatabaseError, SynchronousOnlyOperation):
        raise  # the endpoint answers 503; on the loop: to the request's thread
    except Exception as exc:
        return error_outcome(request_id, error_data(exc), 200)


def _prepare(
    message: dict[str, Any], request_id: Any, scope: CallScope, through_sdk: bool
) -> Step | Outcome:
    method: str = message["method"]
    params = message.get("params")
    route = era.route_of(message, scope.headers)
    if isinstance(route, Route) and route.modern:
        headers = era.lowered(scope.headers)
        route = era.param_header_check(route, method, params, headers, scope.catalog)
    if isinstance(route, Rejection):
        return error_outcome(request_id, route.error, route.status)
    if method == "tools/call":
        refused = calls.admit(request_id, params, route, scope)
        if refused is not None:
            return refused
    chosen = None if through_sdk else select(method, params, route, scope.catalog)
    if chosen == LIST:
        return Step(request_id, method, params, route, listing=True)
    if isinstance(chosen, CatalogEntry):
        arguments = params.get("arguments", {}) if isinstance(params, dict) else {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        kinds = calls.answerable(scope, route.version, meta)
        context = calls.start(scope, chosen, arguments, answerable=kinds)
        return Step(request_id, method, params, route, Call(chosen, arguments, context))
    return Step(request_id, method, params, route)


def select(
    method: str, params: Any, route: Route, catalog: Catalog
) -> CatalogEntry | str | None:
    """Who answers: :data:`LIST`, the entry of a plain call, or the SDK (None).

    Plain means a shape that leaves nothing to interpret: ``tools/list``
    with no params, or only ``_meta`` and a string ``cursor``; ``tools/call``
    of a tool in the catalog with params of only ``name``, an object
    ``arguments`` and ``_meta``, from a client that cannot be asked for input
    (only the SDK seals ``requestState``), of a tool that needs no
    confirmation (``approval``).
    """
    if method == "tools/list":
        return LIST if _plain_list(params) else None
    if method != "tools/call" or not _plain_call(params):
        return None
    entry = catalog.get(params["name"])
    if (
        entry is None
        or entry.confirm
        or interaction.client_can_answer(route.version, params.get("_meta"))
    ):
        return None
    return entry


def _plain_list(params: Any) -> bool:
    if params is None:
        return True
    return (
        isinstance(params, dict)
        and _plain_meta(params)
        and params.keys() <= _LIST_KEYS
        and isinstance(params.get("cursor", ""), str)
    )


def _plain_call(params: Any) -> bool:
    return (
        isinstance(params, dict)
        and _plain_meta(params)
        and params.keys() <= _CALL_KEYS
        and isinstance(params.get("name"), str)
        and isinstance(params.get("arguments", {}), dict)
    )


def _plain_meta(params: dict[str, Any]) -> bool:
    if "_meta" not in params:
        return True
    meta = params["_meta"]
    if not isinstance(meta, dict):
        return False
    if "progressToken" not in meta:
        return True
    return jsonrpc.is_valid_id(meta["progressToken"])  # the same two types


# -- Answers ----------------------------------------------------------------------


def _called(step: Step, result: calls.Result) -> Outcome:
    """The gateway's own ``tools/call`` answer, in the SDK's wire form."""
    try:
        if not isinstance(result, types.CallToolResult):
            raise TypeError("An input request needs the SDK.")  # never: no ask
        wire = sdk.call_result(step.route.version, result)
    except Exception as exc:
        return error_outcome(step.request_id, error_data(exc), 200)
    return encoded_result(step.request_id, encode(wire))


async def _by_sdk(step: Step, scope: CallScope) -> Outcome:
    headers = era.lowered(scope.headers)
    try:
        result = await sdk.serve(
            step.route, step.request_id, step.method, step.params, headers, scope
        )
    except Exception as exc:
        error = error_data(exc)
        if scope.record is not None and not scope.record.error_code:
            scope.record.error_code = str(error.code)
        return error_outcome(step.request_id, error, era.status_of(step.route, error))
    return result_outcome(step.request_id, result)


# -- tools/list answers, encoded once ----------------------------------------------

_ENCODED_LISTS_SIZE = 4096


class EncodedLists:
    """Encoded ``tools/list`` results per catalog object and revision.

    Keyed by the catalog's identity; each entry keeps the catalog (so the
    identity is never reused while the entry lives) and the settings it
    was encoded under. Bounded: full, it starts over. A cached catalog
    lives as long as its version, so its answer does too.
    """

    def __init__(self, size: int = _ENCODED_LISTS_SIZE) -> None:
        self._size = size
        self._entries: dict[tuple[int, str], tuple[Catalog, object, bytes]] = {}

    def get(self, catalog: Catalog, version: str) -> bytes | None:
        hit = self._entries.get((id(catalog), version))
        if hit is None or hit[0] is not catalog or hit[1] is not gateway_settings():
            return None
        return hit[2]

    def put(self, catalog: Catalog, version: str, encoded: bytes) -> None:
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[id(catalog), version] = (catalog, gateway_settings(), encoded)

    def count(self, catalog: Catalog) -> int:
        """How many revisions of ``catalog`` are held (tests)."""
        return sum(1 for held, _, _ in self._entries.values() if held is catalog)


encoded_lists = EncodedLists()


def _listed(step: Step, scope: CallScope) -> Outcome | None:
    if not step.listing:
        return None
    result = encoded_lists.get(scope.catalog, step.route.version)
    return None if result is None else encoded_result(step.request_id, result)


def _remember(step: Step, scope: CallScope, outcome: Outcome) -> Outcome:
    """Keep a plain ``tools/list`` answer, encoded, for the next request."""
    body = outcome.body
    if step.listing and outcome.status == 200 and body and "result" in body:
        encoded_lists.put(scope.catalog, step.route.version, encode(body["result"]))
    return outcome
