"""Asking the caller for input before an engine goes on (no protocol here).

An engine that needs the caller's answer — typically a destructive engine
asking for confirmation — returns an :class:`InputRequest` from ``execute``.
When the caller can answer (MCP 2026-07-28), the call is repeated with the
answer in ``context.reply``; when it cannot, the call ends with a tool error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["accept", "decline", "cancel"]
CONFIRM_FIELD = "confirm"


@dataclass(frozen=True)
class InputRequest:
    """Ask the caller to fill a flat form before the engine continues.

    ``fields`` maps each field name to a JSON Schema of a primitive (string,
    number, integer, boolean or enum). ``state`` is the engine's own
    continuation text; it comes back, unchanged and verified, in the reply.
    ``key`` names the question on the wire (the key of the 2026-07-28
    ``inputRequests``); the engine never sees it again.
    """

    message: str
    fields: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...] = ()
    state: str = ""
    key: str = "input"


@dataclass(frozen=True)
class InputReply:
    """The caller's answer to the engine's earlier :class:`InputRequest`."""

    action: Action
    content: Mapping[str, Any] = field(default_factory=dict)
    state: str = ""

    @property
    def confirmed(self) -> bool:
        """True when the caller accepted and ticked the confirmation box."""
        return self.action == "accept" and self.content.get(CONFIRM_FIELD) is True


def confirm(message: str, state: str = "") -> InputRequest:
    """Ask the caller to confirm with a single yes/no field."""
    checkbox = {"type": "boolean", "title": "Confirm", "description": message}
    return InputRequest(
        message, {CONFIRM_FIELD: checkbox}, required=(CONFIRM_FIELD,), state=state
    )
