"""Derive the portable MCP tool name of an engine id."""

from __future__ import annotations

import hashlib
import re

MAX_LENGTH = 64
_PREFIX_LENGTH = 51
_UNSUPPORTED = re.compile(r"[^a-zA-Z0-9_-]")
VALID_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def tool_name(engine_id: str) -> str:
    """Return the tool name, always matching ``^[a-zA-Z0-9_-]{1,64}$``.

    Each unsupported character becomes ``_``; an empty id becomes ``_``; an
    id longer than 64 characters becomes its first 51 portable characters,
    ``_`` and the first 12 hex digits of the SHA-256 of the original id.
    """
    if not engine_id:
        return "_"
    portable = _UNSUPPORTED.sub("_", engine_id)
    if len(engine_id) <= MAX_LENGTH:
        return portable
    digest = hashlib.sha256(engine_id.encode("utf-8")).hexdigest()[:12]
    return f"{portable[:_PREFIX_LENGTH]}_{digest}"
