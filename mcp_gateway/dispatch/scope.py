"""What the dispatcher is given with a message, and what it answers."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engines_app.context import LogSink, Principal, ProgressSink, Signal
from engines_app.interaction import Answer, Question
from mcp_gateway.audit.callrecord import CallRecord
from mcp_gateway.catalog import Catalog
from mcp_gateway.models import Tenant

Elicit = Callable[[Question, Signal], Awaitable[Answer | None]]
"""Asks the caller during a 2025-era call (``dispatch.asking.Asker.ask``)."""


@dataclass(frozen=True)
class CallScope:
    """What the endpoint knows about the request."""

    tenant: Tenant
    catalog: Catalog
    principal: Principal
    headers: Mapping[str, str]
    progress_sink: ProgressSink | None = None
    log_sink: LogSink | None = None
    record: CallRecord | None = None
    """Filled in for a ``tools/call``; the endpoint writes it to the audit log."""
    listens: bool = False
    """The endpoint streams change notifications (ASGI): ``tools.listChanged``."""
    elicit: Elicit | None = None
    """The call's SSE stream can carry a question to the client (ASGI, or a
    2025 call under WSGI: ``endpoint.asking``)."""
    client_gone: Callable[[], bool] | None = None
    """Whether the client has closed its connection, where a sync server
    can tell (gunicorn); the engine of a ``tools/call`` stops when it has."""


@dataclass(frozen=True)
class Outcome:
    """An answer: HTTP status, JSON-RPC body (or none: 202) and headers."""

    status: int
    body: dict[str, Any] | None
    headers: dict[str, str]
    encoded: bytes | None = None
    """``body`` already encoded as JSON, when the dispatcher built it so."""

    @property
    def json(self) -> dict[str, Any] | None:
        """The body as data, whether it is held encoded or not."""
        if self.encoded is not None:
            decoded: dict[str, Any] = json.loads(self.encoded)
            return decoded
        return self.body
