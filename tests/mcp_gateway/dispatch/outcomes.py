"""Reading the dispatcher's answers in tests."""

from __future__ import annotations

from typing import Any

from mcp_gateway.dispatch.scope import Outcome


def result_of(outcome: Outcome) -> dict[str, Any]:
    """The JSON-RPC result of ``outcome``, asserted not an error."""
    assert outcome.json is not None
    assert "error" not in outcome.json, outcome.json
    result: dict[str, Any] = outcome.json["result"]
    return result
