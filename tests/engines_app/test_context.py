from __future__ import annotations

import threading
import time

from engines_app.context import EngineContext, EngineRequest, Principal, Signal


def test_a_signal_without_deadline_is_not_cancelled_and_has_no_remaining_time():
    signal = Signal()

    assert signal.remaining() is None
    assert signal.cancelled is False
    assert signal.wait(0.01) is False


def test_cancelling_a_signal_is_seen_at_once():
    signal = Signal()

    signal.cancel()

    assert signal.cancelled is True
    assert signal.wait(5) is True


def test_a_cancel_from_another_thread_ends_a_wait_early():
    signal = Signal()
    threading.Timer(0.05, signal.cancel).start()
    started = time.monotonic()

    cancelled = signal.wait(5)

    assert cancelled is True
    assert time.monotonic() - started < 2


def test_a_passed_deadline_counts_as_cancelled():
    signal = Signal(deadline=time.monotonic() - 1)

    assert signal.remaining() == 0.0
    assert signal.cancelled is True
    assert signal.wait(5) is True


def test_a_wait_never_outlasts_the_deadline():
    signal = Signal(deadline=time.monotonic() + 0.05)
    started = time.monotonic()

    cancelled = signal.wait(5)

    assert cancelled is True
    assert time.monotonic() - started < 2


def test_remaining_time_counts_down_to_the_deadline():
    signal = Signal(deadline=time.monotonic() + 60)

    remaining = signal.remaining()

    assert remaining is not None
    assert 0 < remaining <= 60
    assert signal.cancelled is False


def test_a_principal_without_user_is_anonymous():
    assert Principal(tenant="acme").is_anonymous is True
    assert Principal(tenant="acme", user="alice").is_anonymous is False


def test_a_context_drops_progress_and_logs_when_nobody_listens():
    context = EngineContext(EngineRequest("x", {}), Principal(tenant="acme"))

    context.report_progress(1, 2, "half")
    context.log("info", "hello")

    assert context.config == {}
    assert context.signal.cancelled is False


def test_a_context_forwards_progress_and_logs_to_its_sinks():
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[tuple[str, str]] = []
    context = EngineContext(
        EngineRequest("x", {}),
        Principal(tenant="acme"),
        progress_sink=lambda p, t, m: progress.append((p, t, m)),
        log_sink=lambda level, message: logs.append((level, message)),
    )

    context.report_progress(1, 2, "half")
    context.report_progress(2)
    context.log("warning", "careful")

    assert progress == [(1, 2, "half"), (2, None, None)]
    assert logs == [("warning", "careful")]
