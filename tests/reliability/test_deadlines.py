"""Deadlines: async engines cancelled, sync engines abandoned, a bounded pool."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from engines_app.context import EngineContext, Principal
from engines_app.engine import Engine
from engines_app.errors import EngineError
from mcp_gateway.models import Tenant
from mcp_gateway.runtime import adapter, deadlines

ALICE = Principal(tenant="acme", user="alice")


class Sleeper(Engine):
    id = "test.sleeper"
    name = "Sleeper"
    description = "Wait on the signal for a long time."
    deadline_seconds = 0.2

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def execute(self, context: EngineContext) -> Any:
        cancelled = context.signal.wait(5)
        self.stopped.set()
        return {"cancelled": cancelled}


class Blocker(Engine):
    id = "test.blocker"
    name = "Blocker"
    description = "Block until released, ignoring the signal."

    def __init__(self) -> None:
        self.release = threading.Event()

    def execute(self, context: EngineContext) -> Any:
        self.release.wait(5)
        return {}


class CountTenants(Engine):
    id = "test.count_tenants"
    name = "Count tenants"
    description = "Use the ORM from a pool thread."

    def execute(self, context: EngineContext) -> Any:
        return {"tenants": Tenant.objects.count()}


def run(engine: Any, seconds: float | None = None) -> dict[str, Any]:
    deadline = deadlines.deadline_for(engine) if seconds is None else seconds
    context = adapter.build_context(
        engine, {}, principal=ALICE, config={}, deadline_seconds=deadline
    )
    result = asyncio.run(adapter.aexecute(engine, {}, context))
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def code_of(result: dict[str, Any]) -> str:
    return str(json.loads(result["content"][0]["text"])["code"])


def test_the_engines_own_deadline_overrides_the_setting(settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ENGINE_DEADLINE_SECONDS": 9.0}

    assert deadlines.deadline_for(Sleeper()) == 0.2
    assert deadlines.deadline_for(CountTenants()) == 9.0


def test_a_sync_engine_past_its_deadline_is_a_prompt_timeout_and_told_to_stop():
    engine = Sleeper()
    before = deadlines.engine_pool().abandoned
    started = time.monotonic()

    result = run(engine)

    assert time.monotonic() - started < 1.5
    assert result["isError"] is True
    assert code_of(result) == "TIMEOUT"
    assert deadlines.engine_pool().abandoned == before + 1
    assert engine.stopped.wait(2)  # the signal was cancelled


def test_an_async_engine_past_its_deadline_is_cancelled():
    class Slow(Engine):
        id = "test.slow_async"
        name = "Slow"
        description = "Sleep."
        cancelled = False

        async def execute(self, context: EngineContext) -> Any:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                type(self).cancelled = True
                raise
            return {}

    result = run(Slow(), seconds=0.1)

    assert code_of(result) == "TIMEOUT"
    assert Slow.cancelled is True


def test_a_full_pool_refuses_instead_of_queueing(settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ENGINE_THREADS": 1}
    blocker = Blocker()
    worker = threading.Thread(target=run, args=(blocker, 3.0))
    worker.start()
    time.sleep(0.2)

    refused = run(Blocker(), seconds=1.0)
    blocker.release.set()
    worker.join()

    assert code_of(refused) == "BUSY"
    released = Blocker()
    released.release.set()
    assert run(released, seconds=1.0)["isError"] is False


@pytest.mark.django_db(transaction=True)
def test_sync_engines_may_use_the_orm_in_pool_threads():
    Tenant.objects.create(slug="one", name="One")

    result = run(CountTenants(), seconds=5.0)

    assert result["structuredContent"] == {"tenants": 1}


class Observant(Engine):
    """Like demo.slow: waits on its signal and says CANCELLED when it trips."""

    id = "test.observant"
    name = "Observant"
    description = "Give up when the signal says so."
    deadline_seconds = 0.05

    def execute(self, context: EngineContext) -> Any:
        if context.signal.wait(5):
            raise EngineError("CANCELLED", "The call was cancelled.")
        return {}


def test_an_engine_noticing_its_own_deadline_is_always_a_timeout():
    engine = Observant()

    codes = {code_of(run(engine)) for _ in range(20)}
    synced = set()
    for _ in range(20):
        context = adapter.build_context(
            engine, {}, principal=ALICE, config={}, deadline_seconds=0.05
        )
        result = adapter.execute(engine, {}, context)
        synced.add(code_of(result.model_dump(by_alias=True, mode="json")))

    assert codes == {"TIMEOUT"}
    assert synced == {"TIMEOUT"}


def test_a_caller_cancelling_before_the_deadline_is_no_timeout():
    engine = Observant()
    context = adapter.build_context(
        engine, {}, principal=ALICE, config={}, deadline_seconds=5
    )
    context.signal.cancel()

    result = adapter.execute(engine, {}, context)

    assert code_of(result.model_dump(by_alias=True, mode="json")) == "CANCELLED"


def test_a_failing_connection_close_still_frees_the_pool_slot(settings, monkeypatch):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ENGINE_THREADS": 1}
    pool = deadlines.engine_pool()

    def broken_close() -> None:
        raise RuntimeError("the database went away while closing")

    monkeypatch.setattr(deadlines, "close_old_connections", broken_close)
    released = Blocker()
    released.release.set()
    first = pool.submit(released.execute, None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        first.result(timeout=5)

    second = pool.submit(released.execute, None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        second.result(timeout=5)  # admitted: the first run's slot came back
