"""Outcomes on the wire: JSON-RPC errors and results, encoded once."""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data

from mcp_gateway.dispatch.scope import Outcome

logger = logging.getLogger("mcp_gateway")


def error_data(exc: Exception) -> types.ErrorData:
    """The SDK's error for a handler's exception; anything else is logged."""
    error = handler_exception_to_error_data(exc)
    if error is not None:
        return error
    logger.exception("MCP request failed", exc_info=exc)
    return types.ErrorData(code=types.INTERNAL_ERROR, message="Internal error")


def error_outcome(request_id: Any, error: types.ErrorData, status: int) -> Outcome:
    dumped = error.model_dump(mode="json", by_alias=True, exclude_none=True)
    body = {"jsonrpc": "2.0", "id": request_id, "error": dumped}
    return Outcome(status, body, {})


def result_outcome(request_id: Any, result: dict[str, Any]) -> Outcome:
    return Outcome(200, {"jsonrpc": "2.0", "id": request_id, "result": result}, {})


def encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def encoded_result(request_id: Any, result: bytes) -> Outcome:
    """A result already encoded, in its JSON-RPC response."""
    head = b'{"jsonrpc":"2.0","id":' + encode(request_id) + b',"result":'
    return Outcome(200, None, {}, encoded=head + result + b"}")
