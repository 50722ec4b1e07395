"""What an engine sees of the call it serves: no protocol objects here."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engines_app.interaction import Answer, InputReply, Kind

ProgressSink = Callable[[float, float | None, str | None], None]
LogSink = Callable[[str, str], None]
SpanOpener = Callable[[str, Mapping[str, Any]], contextlib.AbstractContextManager[Any]]
"""Opens a timed section of an engine's work (a tracing span, when traced)."""


def _drop_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


def _drop_log(level: str, message: str) -> None:
    return None


def _no_span(
    name: str, attributes: Mapping[str, Any]
) -> contextlib.AbstractContextManager[Any]:
    return contextlib.nullcontext()


@dataclass(frozen=True)
class Principal:
    """Who calls, for which tenant, with which scopes (a snapshot).

    ``tenant`` is the tenant's slug (its URL segment, for display and logs);
    ``tenant_id`` its primary key, the one stable key for data an engine
    keeps per tenant: a slug can be given up and later taken by another
    tenant, a primary key never is. ``user`` is the caller's
    ``get_username()`` (the value of the user model's ``USERNAME_FIELD``).
    """

    tenant: str
    user: str | None = None
    token: str | None = None
    scopes: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    tenant_id: int | None = None

    @property
    def is_anonymous(self) -> bool:
        return self.user is None


@dataclass(frozen=True)
class EngineRequest:
    strategy: str
    input: Mapping[str, Any]


class Signal:
    """A deadline and a cancellation flag an engine may poll or wait on."""

    _creating = threading.Lock()

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self._event: threading.Event | None = None  # made when first needed

    def cancel(self) -> None:
        self._flag().set()

    @property
    def cancelled(self) -> bool:
        event = self._event
        return (event is not None and event.is_set()) or self.remaining() == 0.0

    def remaining(self) -> float | None:
        """Seconds left before the deadline, or ``None`` without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True when cancelled meanwhile."""
        remaining = self.remaining()
        if remaining is not None:
            seconds = min(seconds, remaining)
        return self._flag().wait(seconds) or self.cancelled

    def _flag(self) -> threading.Event:
        """The event, made once even when two threads ask together."""
        if self._event is None:
            with self._creating:
                if self._event is None:
                    self._event = threading.Event()
        return self._event


@dataclass(frozen=True)
class EngineContext:
    request: EngineRequest
    principal: Principal
    config: Mapping[str, Any] = field(default_factory=dict)
    signal: Signal = field(default_factory=Signal)
    progress_sink: ProgressSink = _drop_progress
    log_sink: LogSink = _drop_log
    reply: InputReply | None = None
    """The caller's answer when this call repeats one that asked a single
    form or URL question; ``None`` on a first call (and for other questions:
    see ``answers``)."""
    answers: Mapping[str, Answer] = field(default_factory=dict)
    """Every answer by its question's key when this call repeats one that
    asked (``engines_app.interaction``); empty on a first call."""
    answerable: frozenset[Kind] = frozenset()
    """The kinds of question the caller can answer on this call (``form``,
    ``url``, ``model``, ``roots``); empty when it can answer none."""
    span_opener: SpanOpener = _no_span
    secrets: Mapping[str, str] = field(default_factory=dict)
    """The secrets staff set for this tenant and engine, by name: only the
    names the engine declares in ``secrets``, each one present (a call of
    an engine missing one never starts). Never log or return them."""

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the caller how far along the work is, when it can listen."""
        self.progress_sink(progress, total, message)

    def log(self, level: str, message: str) -> None:
        """Send a log line to the caller, when it can listen."""
        self.log_sink(level, message)

    def span(
        self, name: str, **attributes: Any
    ) -> contextlib.AbstractContextManager[Any]:
        """Time a section of the work, as a span under the call's own when
        the site traces (``with context.span("query", rows=3): ...``); a
        no-op otherwise. Attribute values are strings, numbers or booleans."""
        return self.span_opener(name, attributes)
