"""``tools/list`` and ``tools/call`` answered without the SDK's dispatch.

Under WSGI, ``serve_one`` costs an event-loop run, the SDK's middleware chain
and a pydantic round trip per message. The two methods clients send most are
answered here instead, for requests whose shape leaves nothing to interpret:

- ``tools/list`` with no params, or only ``_meta`` and a string ``cursor``:
  the SDK's own answer for the catalog and protocol revision, encoded once
  and kept with the catalog (a catalog lives as long as its version);
- ``tools/call`` of a tool in the catalog whose engine is sync, with params
  of only ``name``, an object ``arguments`` and ``_meta``, from a client that
  cannot be asked for input: the same admission, audit record and adapter as
  the SDK path, the engine in the bounded pool, and the result shaped with
  the SDK's per-revision serializer.

Anything else (another method, an error to word, a retry carrying
``requestState``, an async engine, streaming) returns ``None`` and takes the
SDK path. ``tests/mcp_gateway/test_hotpath.py`` holds both paths to the same
answers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp_types import methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engines_app.engine import is_async_engine
from mcp_gateway import adapter, interaction, protocol
from mcp_gateway.conf import gateway_settings
from mcp_gateway.protocol import CallScope, Outcome, Rejection, Route

_LIST_KEYS = frozenset({"_meta", "cursor"})
_CALL_KEYS = frozenset({"_meta", "name", "arguments"})


def try_handle(message: dict[str, Any], scope: CallScope) -> Outcome | None:
    """Answer a plain ``tools/list`` or ``tools/call``, or return ``None``."""
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
        return _list(message, route, scope)
    assert isinstance(params, dict)  # noqa: S101 - _plain requires it for a call
    return _call(message["id"], params, route, scope)


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
    token = meta["progressToken"]
    return isinstance(token, str) or (
        isinstance(token, int) and not isinstance(token, bool)
    )


def _route(
    message: dict[str, Any], method: str, params: Any, scope: CallScope
) -> Route | None:
    """The request's revision, or ``None`` when the SDK path must refuse it."""
    headers = protocol.lowered(scope.headers)
    route = protocol.route_of(message, headers)
    if isinstance(route, Route) and route.modern:
        route = protocol.param_header_check(
            route, method, params, headers, scope.catalog
        )
    return None if isinstance(route, Rejection) else route


# -- tools/list -----------------------------------------------------------------


def _list(message: dict[str, Any], route: Route, scope: CallScope) -> Outcome | None:
    key = (route.version, gateway_settings())
    result = scope.catalog.encoded.get(key)
    if result is None:
        outcome = protocol.handle(message, scope)
        body = outcome.body
        if outcome.status != 200 or body is None or "result" not in body:
            return outcome
        result = scope.catalog.encoded[key] = _encode(body["result"])
    return _answer(message["id"], result)


# -- tools/call -----------------------------------------------------------------


def _call(
    request_id: Any, params: dict[str, Any], route: Route, scope: CallScope
) -> Outcome | None:
    entry = scope.catalog.get(params["name"])
    if entry is None or is_async_engine(entry.engine):
        return None
    if interaction.client_can_answer(route.version, params.get("_meta")):
        return None  # the engine may ask; only the SDK path seals requestState
    refused = protocol.admit_call(request_id, params, route, scope)
    if refused is not None:
        return refused
    arguments = params.get("arguments", {})
    context = protocol.engine_context(scope, entry, arguments)
    protocol.note_engine(scope, entry, arguments)
    result = adapter.execute(entry.engine, arguments, context)
    protocol.finish(scope, protocol.result_outcome(result))
    try:
        wire = _call_result(route.version, result)
    except Exception as exc:
        return protocol.error_outcome(request_id, protocol.error_data(exc), 200)
    return _answer(request_id, _encode(wire))


def _call_result(version: str, result: types.CallToolResult) -> dict[str, Any]:
    """The wire form the SDK gives a ``CallToolResult`` at ``version``."""
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


# -- Encoding -------------------------------------------------------------------


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _answer(request_id: Any, result: bytes) -> Outcome:
    head = b'{"jsonrpc":"2.0","id":' + _encode(request_id) + b',"result":'
    return Outcome(200, None, {}, encoded=head + result + b"}")


def decoded(outcome: Outcome) -> Mapping[str, Any] | None:
    """The outcome's body as a mapping, decoding a hot-path answer."""
    if outcome.encoded is not None:
        body: Mapping[str, Any] = json.loads(outcome.encoded)
        return body
    return outcome.body
