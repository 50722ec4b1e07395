"""A cancelled call cancels its engine: async engines directly, sync ones
through their context's signal."""

from __future__ import annotations

import asyncio
from typing import Any

from engines_app.context import EngineContext, Principal
from engines_app.engine import engine
from mcp_gateway.runtime.adapter import aexecute, build_context

stops: list[str] = []


@engine("test.wait_sync", name="Wait", description="Wait for the signal.")
def wait_sync(context: EngineContext) -> Any:
    stopped = context.signal.wait(5)
    stops.append("sync-cancelled" if stopped else "sync-finished")
    return {}


@engine("test.wait_async", name="Wait", description="Sleep until cancelled.")
async def wait_async(context: EngineContext) -> Any:
    try:
        await asyncio.sleep(5)
    except asyncio.CancelledError:
        stops.append("async-cancelled")
        raise
    return {}


def cancel_after_start(target: Any) -> list[str]:
    stops.clear()
    context = build_context(
        target, {}, principal=Principal(tenant="t"), config={}, deadline_seconds=30
    )

    async def go() -> None:
        call = asyncio.ensure_future(aexecute(target, {}, context))
        await asyncio.sleep(0.2)
        call.cancel()
        await asyncio.wait({call})
        assert call.cancelled()

    asyncio.run(go())
    return list(stops)


def test_cancelling_a_sync_engines_call_cancels_its_signal():
    assert cancel_after_start(wait_sync) == ["sync-cancelled"]


def test_cancelling_an_async_engines_call_cancels_the_engine():
    assert cancel_after_start(wait_async) == ["async-cancelled"]
