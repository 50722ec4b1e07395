"""Server-sent events framing for the MCP response stream."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp_gateway.endpoint.boundary import accepts

HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",  # nginx would otherwise hold events back
}
KEEPALIVE = b": keep-alive\n\n"
"""A comment line: clients ignore it, proxies see the stream is alive."""
MEDIA_TYPE = "text/event-stream"


def event(message: Mapping[str, Any]) -> bytes:
    """Frame one JSON-RPC message as an SSE ``message`` event."""
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    return encoded_event(data.encode())


def encoded_event(data: bytes) -> bytes:
    """Frame a message already encoded as one line of JSON."""
    return b"event: message\ndata: " + data + b"\n\n"


def accepts_event_stream(accept: str) -> bool:
    """Whether an ``Accept`` header names ``text/event-stream``.

    Wildcards do not count: a generic client (``*/*``) gets plain JSON.
    """
    return accepts(accept, (MEDIA_TYPE,))
