"""dispatch.cancellation: which running calls the shared cache hears of.

The cross-worker round trip (a cancel posted to another process) is
tests/http/test_cancel_live.py; here, one process and its cache.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import caches

from engines_app.context import EngineContext, Principal
from engines_app.engine import engine
from mcp_gateway.dispatch import cancellation
from mcp_gateway.runtime.adapter import build_context

ALICE = Principal(tenant="acme", tenant_id=7, user="alice", token="t1")
VERSION = "2025-11-25"


@engine("test.noop", name="Noop", description="Nothing.")
def noop(context: EngineContext) -> Any:
    return {}


@pytest.fixture(autouse=True)
def clean_cache() -> Iterator[None]:
    caches["default"].clear()
    cancellation._failing_until[0] = 0.0
    yield
    cancellation._failing_until[0] = 0.0
    caches["default"].clear()


def context() -> EngineContext:
    return build_context(noop, {}, principal=ALICE, config={}, deadline_seconds=30)


def held(request_id: Any) -> Any:
    return caches["default"].get(cancellation.key_of(7, ALICE, request_id))


def settled(running: cancellation.Running) -> bool:
    return running.state not in ("pending", "announcing")


def eventually(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        time.sleep(0.01)
    raise AssertionError("never happened")


def test_a_short_call_never_reaches_the_shared_cache(monkeypatch):
    noted: list[str] = []
    announce = cancellation._announce  # the announcer thread looks it up

    def recording(running: cancellation.Running) -> None:
        noted.append(running.token)
        announce(running)

    monkeypatch.setattr(cancellation, "_announce", recording)
    for request_id in range(20):
        with cancellation.watching(7, ALICE, VERSION, request_id, context().signal):
            time.sleep(cancellation.ANNOUNCE_AFTER_SECONDS / 5 or 0.01)
    with cancellation.watching(7, ALICE, VERSION, "long", context().signal) as long:
        eventually(lambda: held("long") is not None)  # the control: noted

    assert long is not None
    assert noted == [long.token]
    assert cancellation.running_count() == 0


def test_a_longer_call_is_noted_then_withdrawn():
    with cancellation.watching(7, ALICE, VERSION, "r1", context().signal) as running:
        assert running is not None
        eventually(lambda: held("r1") is not None)
        entry = held("r1")
        assert entry["token"] == running.token

    assert held("r1") is None
    assert cancellation.running_count() == 0


@pytest.mark.django_db(transaction=True)  # on PostgreSQL the bus is NOTIFY
def test_a_noted_call_is_cancelled_through_the_relay():
    call = context()
    with cancellation.watching(7, ALICE, VERSION, "r2", call.signal) as running:
        eventually(lambda: held("r2") is not None)
        assert not cancellation.relay(7, ALICE, {"requestId": "nope"})
        assert cancellation.relay(7, ALICE, {"requestId": "r2"})
        eventually(lambda: call.signal.cancelled)
        assert cancellation.cancelled(running)


def test_two_running_calls_with_one_id_are_ambiguous():
    started = threading.Event()
    finish = threading.Event()

    def other() -> None:
        with cancellation.watching(7, ALICE, VERSION, "same", context().signal):
            started.set()
            finish.wait(5)

    with cancellation.watching(7, ALICE, VERSION, "same", context().signal):
        eventually(lambda: held("same") is not None)
        thread = threading.Thread(target=other)
        thread.start()
        started.wait(5)
        eventually(lambda: held("same") == cancellation.AMBIGUOUS)
        assert not cancellation.relay(7, ALICE, {"requestId": "same"})
        finish.set()
        thread.join(5)

    assert held("same") == cancellation.AMBIGUOUS  # until it expires


def test_the_2026_wire_and_odd_ids_are_not_watched():
    with cancellation.watching(7, ALICE, "2026-07-28", 1, context().signal) as modern:
        assert modern is None
    with cancellation.watching(7, ALICE, VERSION, True, context().signal) as odd:
        assert odd is None


def test_after_a_cache_failure_calls_are_left_unnoted_for_a_while(
    settings, monkeypatch
):
    dead = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
    }
    settings.CACHES = {**settings.CACHES, "dead": dead}
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "RATE_LIMIT_CACHE": "dead"}
    reached: list[str] = []
    cache_of = cancellation._cache

    def counting() -> Any:
        reached.append("cache")
        return cache_of()

    monkeypatch.setattr(cancellation, "_cache", counting)
    states = []
    for request_id in ("first", "second"):
        with cancellation.watching(
            7, ALICE, VERSION, request_id, context().signal
        ) as call:
            assert call is not None
            eventually(lambda: settled(call))
            states.append(call.state)

    assert reached == ["cache"]  # the first tried and failed; the second not
    assert states == ["skipped", "skipped"]
    assert cancellation.running_count() == 0
