"""A stable hash of the parts of an engine that define its tool."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from mcp_gateway.naming import tool_name


def definition(engine: Any) -> dict[str, Any]:
    """Return the tool-defining fields of an engine as plain JSON data."""
    hints = getattr(engine, "hints", None)
    return {
        "name": tool_name(engine.id),
        "title": engine.name,
        "description": engine.description,
        "input_schema": getattr(engine, "input_schema", None),
        "output_schema": getattr(engine, "output_schema", None),
        "hints": (
            dataclasses.asdict(hints)
            if dataclasses.is_dataclass(hints) and not isinstance(hints, type)
            else None
        ),
    }


def fingerprint(engine: Any) -> str:
    text = json.dumps(definition(engine), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
