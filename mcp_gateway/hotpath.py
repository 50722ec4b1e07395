"""``tools/list`` and ``tools/call`` answered without the SDK's dispatch.

``serve_one`` costs an event-loop run (under WSGI), the SDK's middleware
chain and a pydantic round trip per message. The two methods clients send
most are answered here instead, for requests whose shape leaves nothing to
interpret:

- ``tools/list`` with no params, or only ``_meta`` and a string ``cursor``:
  the SDK's own answer for the catalog and protocol revision, encoded once
  and kept in :data:`encoded_lists` while the catalog lives (a cached
  catalog lives as long as its version);
- ``tools/call`` of a tool in the catalog, with params of only ``name``, an
  object ``arguments`` and ``_meta``, from a client that cannot be asked for
  input: the same admission, audit record, adapter and deadlines as the SDK
  path, and the result shaped with the SDK's per-revision serializer.

Anything else (another method, an error to word, a retry carrying
``requestState``, a client that can answer an input request) returns
``None`` and takes the SDK path. :func:`try_handle` serves sync code (WSGI),
:func:`atry_handle` async code (ASGI, where progress and log lines reach the
scope's sinks). ``tests/mcp_gateway/test_hotpath.py`` holds both paths to
the same answers.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp_types import methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engines_app.context import EngineContext
from mcp_gateway import adapter, callrecord, interaction, jsonrpc, protocol
from mcp_gateway.catalog import Catalog, CatalogEntry
from mcp_gateway.conf import gateway_settings
from mcp_gateway.protocol import (
    CallScope,
    Outcome,
    Rejection,
    Route,
    ahandle,
    handle,
)

_LIST_KEYS = frozenset({"_meta", "cursor"})
_ENCODED_LISTS_SIZE = 4096


class EncodedLists:
    """Encoded ``tools/list`` results per catalog object and revision.

    Keyed by the catalog's identity; each entry keeps the catalog (so the
    identity is never reused while the entry lives) and the settings it
    was encoded under. Bounded: full, it starts over.
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
_CALL_KEYS = frozenset({"_meta", "name", "arguments"})


@dataclass(frozen=True)
class _Plan:
    """An eligible request: its revision and, for a call, the engine's part."""

    request_id: Any
    route: Route
    call: _Call | None = None


@dataclass(frozen=True)
class _Call:
    entry: CatalogEntry
    arguments: dict[str, Any]
    context: EngineContext


def try_handle(message: dict[str, Any], scope: CallScope) -> Outcome | None:
    """Answer a plain ``tools/list`` or ``tools/call``, or return ``None``.

    For sync code (WSGI): a sync engine runs in the pool without a loop.
    """
    plan = _plan(message, scope)
    if not isinstance(plan, _Plan):
        return plan
    if plan.call is None:
        return _listed(plan, scope) or _remember(plan, scope, handle(message, scope))
    result = adapter.execute(
        plan.call.entry.engine, plan.call.arguments, plan.call.context
    )
    return _called(plan, scope, result)


async def atry_handle(message: dict[str, Any], scope: CallScope) -> Outcome | None:
    """The async twin (ASGI): progress and log lines reach the scope's sinks."""
    plan = _plan(message, scope)
    if not isinstance(plan, _Plan):
        return plan
    if plan.call is None:
        listed = _listed(plan, scope)
        return listed or _remember(plan, scope, await ahandle(message, scope))
    call = plan.call
    try:
        result = await adapter.aexecute(call.entry.engine, call.arguments, call.context)
    except asyncio.CancelledError:
        protocol.finish(scope, callrecord.CANCELLED)
        raise
    return _called(plan, scope, result)


def _plan(message: dict[str, Any], scope: CallScope) -> _Plan | Outcome | None:
    """The plan for an eligible request, a refusal (rate limit), or ``None``."""
    method = message.get("method")
    if method not in ("tools/list", "tools/call") or "id" not in message:
        return None
    params = message.get("params")
    if not _plain(method, params):
        return None
    route = _route(message, method, params, scope)
    if route is None:
        return None
    if method == "tools/list":
        return _Plan(message["id"], route)
    assert isinstance(params, dict)  # noqa: S101 - _plain requires it for a call
    return _call_plan(message["id"], params, route, scope)


def _plain(method: str, params: Any) -> bool:
    if params is None:
        return method == "tools/list"
    if not isinstance(params, dict) or not _plain_meta(params):
        return False
    if method == "tools/list":
        return params.keys() <= _LIST_KEYS and isinstance(params.get("cursor", ""), str)
    return (
        params.keys() <= _CALL_KEYS
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


def _route(
    message: dict[str, Any], method: str, params: Any, scope: CallScope
) -> Route | None:
    """The request's revision, or ``None`` when the SDK path must refuse it."""
    route = protocol.route_of(message, scope.headers)
    if isinstance(route, Route) and route.modern:
        headers = protocol.lowered(scope.headers)
        route = protocol.param_header_check(
            route, method, params, headers, scope.catalog
        )
    return None if isinstance(route, Rejection) else route


# -- tools/list -----------------------------------------------------------------


def _listed(plan: _Plan, scope: CallScope) -> Outcome | None:
    """The encoded answer for this catalog and revision, if there is one."""
    result = encoded_lists.get(scope.catalog, plan.route.version)
    return None if result is None else _answer(plan.request_id, result)


def _remember(plan: _Plan, scope: CallScope, outcome: Outcome) -> Outcome:
    """Keep the SDK's answer, encoded, for the next request; return it."""
    body = outcome.body
    if outcome.status == 200 and body is not None and "result" in body:
        encoded_lists.put(scope.catalog, plan.route.version, _encode(body["result"]))
    return outcome


# -- tools/call -----------------------------------------------------------------


def _call_plan(
    request_id: Any, params: dict[str, Any], route: Route, scope: CallScope
) -> _Plan | Outcome | None:
    entry = scope.catalog.get(params["name"])
    if entry is None:
        return None  # the SDK path words the error
    if interaction.client_can_answer(route.version, params.get("_meta")):
        return None  # the engine may ask; only the SDK path seals requestState
    refused = protocol.admit_call(request_id, params, route, scope)
    if refused is not None:
        return refused
    arguments = params.get("arguments", {})
    context = protocol.engine_context(scope, entry, arguments)
    protocol.note_engine(scope, entry, arguments)
    return _Plan(request_id, route, _Call(entry, arguments, context))


def _called(
    plan: _Plan,
    scope: CallScope,
    result: types.CallToolResult | types.InputRequiredResult,
) -> Outcome:
    protocol.finish(scope, protocol.result_outcome(result))
    try:
        if not isinstance(result, types.CallToolResult):
            raise TypeError("An input request needs the SDK path.")  # never: no ask
        wire = _call_result(plan.route.version, result)
    except Exception as exc:
        return protocol.error_outcome(plan.request_id, protocol.error_data(exc), 200)
    return _answer(plan.request_id, _encode(wire))


def _call_result(version: str, result: types.CallToolResult) -> dict[str, Any]:
    """The wire form the SDK gives a ``CallToolResult`` at ``version``."""
    dumped = _text_only(version, result)
    if dumped is None:
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        dumped = methods.serialize_server_result("tools/call", version, dumped)
    if version not in MODERN_PROTOCOL_VERSIONS:
        return dumped
    if dumped.get("resultType") is None:
        dumped["resultType"] = "complete"
    meta = dumped.get("_meta")
    if meta is None or (
        isinstance(meta, dict) and meta.get(types.SERVER_INFO_META_KEY) is None
    ):
        stamp = protocol.sdk_server(gateway_settings().SERVER_NAME).server_info_stamp
        dumped["_meta"] = {**(meta or {}), types.SERVER_INFO_META_KEY: stamp}
    return dumped


def _text_only(version: str, result: types.CallToolResult) -> dict[str, Any] | None:
    """The dump of a result of plain text blocks, built by hand, or ``None``.

    What the SDK's dump and per-revision sieve give such a result (every
    served revision keeps these members), without a pydantic round trip.
    """
    if result.meta is not None:
        return None
    blocks = []
    for block in result.content:
        if type(block) is not types.TextContent or block.annotations or block.meta:
            return None
        blocks.append({"type": "text", "text": block.text})
    dumped: dict[str, Any] = {"content": blocks, "isError": result.is_error}
    if result.structured_content is not None:
        dumped["structuredContent"] = result.structured_content
    if version in MODERN_PROTOCOL_VERSIONS:
        dumped["resultType"] = result.result_type
    return dumped


# -- Encoding -------------------------------------------------------------------


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _answer(request_id: Any, result: bytes) -> Outcome:
    head = b'{"jsonrpc":"2.0","id":' + _encode(request_id) + b',"result":'
    return Outcome(200, None, {}, encoded=head + result + b"}")
