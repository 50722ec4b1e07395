"""From sync code, a client gone away while a sync engine runs cancels it:
the engine is told through its signal and waited for, the wait ends in
``CallerGone``; a client still there changes nothing."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from engines_app.context import EngineContext, Principal
from engines_app.engine import engine
from mcp_gateway.runtime import deadlines
from mcp_gateway.runtime.adapter import build_context, execute

stops: list[str] = []
started = threading.Event()
release = threading.Event()


@engine("test.until_signal", name="Wait", description="Wait for the signal.")
def until_signal(context: EngineContext) -> Any:
    started.set()
    stopped = context.signal.wait(float(context.request.input.get("seconds", 30)))
    stops.append("cancelled" if stopped else "finished")
    return {"stopped": stopped}


@engine("test.deaf", name="Deaf", description="Ignore the signal until released.")
def deaf(context: EngineContext) -> Any:
    started.set()
    release.wait(30)
    stops.append("deaf-finished")
    return {}


class Probe:
    """A client that goes away once the engine has started, if told to."""

    def __init__(self, leaves: bool) -> None:
        self.leaves = leaves
        self.asked = 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.leaves and started.is_set()


def context_for(target: Any, arguments: dict[str, Any], deadline: float) -> Any:
    stops.clear()
    started.clear()
    return build_context(
        target,
        arguments,
        principal=Principal(tenant="t"),
        config={},
        deadline_seconds=deadline,
    )


def test_a_client_gone_cancels_the_signal_and_the_engine_is_waited_for():
    context = context_for(until_signal, {}, 30)
    before = deadlines.engine_pool().abandoned

    with pytest.raises(deadlines.CallerGone):
        deadlines.run_sync(until_signal, context, Probe(leaves=True))

    assert stops == ["cancelled"]  # the engine had returned
    assert context.signal.cancelled
    assert deadlines.engine_pool().abandoned == before


def test_a_client_still_there_gets_the_engines_value():
    context = context_for(until_signal, {"seconds": 0.5}, 30)
    probe = Probe(leaves=False)

    assert deadlines.run_sync(until_signal, context, probe) == {"stopped": False}
    assert probe.asked >= 1  # asked while the engine ran
    assert stops == ["finished"]


def test_an_engine_deaf_to_its_signal_is_abandoned_at_its_deadline():
    context = context_for(deaf, {}, 1)
    before = deadlines.engine_pool().abandoned
    release.clear()

    try:
        with pytest.raises(deadlines.CallerGone):
            deadlines.run_sync(deaf, context, Probe(leaves=True))
        waiting = list(stops)
    finally:
        release.set()

    assert waiting == []  # the caller stopped waiting before the engine returned
    assert deadlines.engine_pool().abandoned == before + 1


def test_the_sync_frame_lets_a_client_gone_through():
    context = context_for(until_signal, {}, 30)

    with pytest.raises(deadlines.CallerGone):
        execute(until_signal, {}, context, Probe(leaves=True))
