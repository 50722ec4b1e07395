"""What the gateway learns about one ``tools/call`` while serving it.

The view starts a record, the protocol layer fills it in as the call goes
through admission, rate limiting and the engine, and the view writes it to
the audit log once the answer is known. Imports nothing from Django.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

OK = "ok"
TOOL_ERROR = "tool_error"
INVALID = "invalid"
FAILED = "failed"
DENIED = "denied"
TIMEOUT = "timeout"
RATE_LIMITED = "rate_limited"
CANCELLED = "cancelled"
BUSY = "busy"
QUOTA = "quota"
AWAITING = "awaiting"
CONFIRMED = "confirmed"
DECLINED = "declined"
EXPIRED = "expired"
UNCONFIRMED = "unconfirmed"
OUTCOMES = (
    OK,
    TOOL_ERROR,
    INVALID,
    FAILED,
    DENIED,
    TIMEOUT,
    RATE_LIMITED,
    CANCELLED,
    BUSY,
    QUOTA,
    AWAITING,
    CONFIRMED,
    DECLINED,
    EXPIRED,
    UNCONFIRMED,
)

_FAILURE_CODES = {
    "FORBIDDEN": DENIED,
    "TIMEOUT": TIMEOUT,
    "EXECUTION_FAILED": FAILED,
    "BUSY": BUSY,
}


@dataclass
class CallRecord:
    """One call's audit facts; ``outcome`` stays ``None`` until it is known."""

    request_id: str = ""
    protocol_version: str = ""
    tool_name: str = ""
    engine_id: str = ""
    engine_version: str = ""
    arguments: Mapping[str, Any] | None = None
    outcome: str | None = None
    error_code: str = ""
    """A failed call's code: the tool error's (``EXECUTION_FAILED``) or the
    JSON-RPC error's (``-32602``)."""
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    charged: tuple[str, ...] = ()
    """Quota counters this call took a unit of (``quotas``), to give back
    when no engine ran after all."""

    def begin(self, request_id: Any, params: Any, protocol_version: str) -> None:
        """Note what the request says, before anything can fail."""
        self.request_id = storable(str(request_id))[:200]
        self.protocol_version = storable(protocol_version)[:16]
        name = params.get("name") if isinstance(params, Mapping) else None
        self.tool_name = storable(name)[:200] if isinstance(name, str) else ""
        self.started = time.monotonic()

    def finish(self, outcome: str, error_code: str = "") -> None:
        self.outcome = outcome
        self.finished = time.monotonic()
        if error_code:
            self.error_code = storable(error_code)[:64]

    @property
    def duration_ms(self) -> int:
        end = self.finished if self.finished is not None else time.monotonic()
        return max(0, round((end - self.started) * 1000))


def storable(text: str) -> str:
    """``text`` as every database stores it: no NUL, no lone surrogate."""
    text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def error_code_of(is_error: bool, first_text: str | None) -> str:
    """The ``code`` of a tool error's JSON payload, or empty."""
    if not is_error:
        return ""
    try:
        payload = json.loads(first_text or "")
    except ValueError:
        return ""
    code = payload.get("code") if isinstance(payload, dict) else None
    return code if isinstance(code, str) else ""


def outcome_of(is_error: bool, first_text: str | None) -> str:
    """Classify a tool result: ok, or the failure its error code names."""
    if not is_error:
        return OK
    try:
        payload = json.loads(first_text or "")
    except ValueError:
        return TOOL_ERROR
    code = payload.get("code") if isinstance(payload, dict) else None
    return _FAILURE_CODES.get(code, TOOL_ERROR) if isinstance(code, str) else TOOL_ERROR
