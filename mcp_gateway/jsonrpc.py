"""The JSON-RPC 2.0 wire format, strictly: parse one message, build errors.

Imports nothing from Django. The standard error codes are ``mcp_types``'
own; ``SERVER_ERROR`` (-32000, implementation-defined) is the gateway's
"try again later" code, and :data:`UNAVAILABLE` its one wording.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from mcp_types import INTERNAL_ERROR as INTERNAL_ERROR
from mcp_types import INVALID_PARAMS as INVALID_PARAMS
from mcp_types import INVALID_REQUEST as INVALID_REQUEST
from mcp_types import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from mcp_types import PARSE_ERROR as PARSE_ERROR
from mcp_types import ErrorData

SERVER_ERROR = -32000
UNAVAILABLE = "Service unavailable."
"""What every "the database, the cache or an authorization server is down"
answer says (HTTP 503), whichever part failed."""
MAX_DEPTH = 64

_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
NO_ID: Any = object()  # the id member is omitted, never ``null``
Kind = Literal["request", "notification", "response"]


class JsonRpcError(Exception):
    """Base class; subclasses set ``code`` and ``default_message``."""

    code: ClassVar[int] = INTERNAL_ERROR
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, *, id: Any = NO_ID) -> None:
        self.message = message or self.default_message
        self.id = id
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message, self.id)


class ParseError(JsonRpcError):
    code = PARSE_ERROR
    default_message = "Parse error"


class InvalidRequest(JsonRpcError):
    code = INVALID_REQUEST
    default_message = "Invalid Request"


@dataclass(frozen=True)
class Message:
    kind: Kind
    payload: dict[str, Any]

    @property
    def id(self) -> Any:
        return self.payload.get("id", NO_ID)


def error_body(code: int, message: str, id: Any = NO_ID) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    if id is not NO_ID:
        body["id"] = id
    body["error"] = {"code": code, "message": message}
    return body


def unavailable() -> ErrorData:
    """The error of a request the gateway cannot serve right now (HTTP 503)."""
    return ErrorData(code=SERVER_ERROR, message=UNAVAILABLE)


def progress_params(
    token: Any, progress: float, total: float | None, message: str | None
) -> dict[str, Any]:
    """The params of ``notifications/progress`` (optional members omitted)."""
    params: dict[str, Any] = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message is not None:
        params["message"] = message
    return params


def is_valid_id(value: Any) -> bool:
    """MCP ids are strings or integers, never null, booleans or fractions."""
    return isinstance(value, str) or (
        isinstance(value, int) and not isinstance(value, bool)
    )


def parse(body: bytes) -> Message:
    """Parse one JSON-RPC message from raw bytes.

    Raises:
        ParseError: not strict UTF-8, not JSON, NaN/Infinity (or a number
            that overflows to it), duplicate keys, or nesting deeper than
            ``MAX_DEPTH``.
        InvalidRequest: valid JSON that is not one JSON-RPC message.
    """
    return classify(loads(body))


def loads(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
        if text.count("[") + text.count("{") > MAX_DEPTH and _depth(text) > MAX_DEPTH:
            raise ParseError()
        value = _decoder.decode(text)
        if _LONE_SURROGATE.search(text):
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except (UnicodeError, ValueError, RecursionError) as exc:
        raise ParseError() from exc


def classify(value: Any) -> Message:
    if not isinstance(value, dict):
        raise InvalidRequest()
    has_id = "id" in value
    readable_id = value["id"] if has_id and is_valid_id(value["id"]) else NO_ID
    if value.get("jsonrpc") != "2.0" or (has_id and readable_id is NO_ID):
        raise InvalidRequest(id=readable_id)
    if "method" not in value:
        return _response(value, readable_id)
    if not isinstance(value["method"], str) or "result" in value or "error" in value:
        raise InvalidRequest(id=readable_id)
    params = value.get("params")
    if params is not None and not isinstance(params, dict | list):
        raise InvalidRequest(id=readable_id)
    return Message("request" if has_id else "notification", value)


def _response(value: dict[str, Any], id: Any) -> Message:
    if id is NO_ID or ("result" in value) == ("error" in value):
        raise InvalidRequest(id=id)
    return Message("response", value)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    """A JSON number as a float; one that overflows to infinity is refused
    like ``Infinity`` itself (no database stores it, no engine expects it)."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} overflows")
    return value


# One decoder for every request (``json.loads`` with hooks builds one per call).
_decoder = json.JSONDecoder(
    object_pairs_hook=_unique, parse_constant=_no_constant, parse_float=_finite
)


def _depth(text: str) -> int:
    """Deepest bracket nesting outside strings (a cheap pre-check)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest
