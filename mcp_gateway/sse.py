"""Server-sent events framing for the MCP response stream."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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
    return f"event: message\ndata: {data}\n\n".encode()


def accepts_event_stream(accept: str) -> bool:
    """Whether an ``Accept`` header names ``text/event-stream``.

    Wildcards do not count: a generic client (``*/*``) gets plain JSON.
    """
    for item in accept.split(","):
        media, *params = (part.strip().lower() for part in item.split(";"))
        if media == MEDIA_TYPE and _quality(params) > 0:
            return True
    return False


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0
