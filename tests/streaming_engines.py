"""Engines for the streaming tests: they report and record how they ended.

Each appends a line to the file ``MCPGW_PROBE_FILE`` names (when set), so a
live-server test can tell whether the engine finished or stopped early.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from engines_app.context import EngineContext
from engines_app.engine import Engine

STEPS = {
    "type": "object",
    "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 600}},
    "required": ["steps"],
    "additionalProperties": False,
}


def record(line: str) -> None:
    path = os.environ.get("MCPGW_PROBE_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as probe:
            probe.write(f"{line}\n")


class AsyncTicker(Engine):
    id = "test.async_ticker"
    name = "Async ticker"
    description = "Report progress and a log line every 0.1 s, then finish."
    input_schema = STEPS

    async def execute(self, context: EngineContext) -> dict[str, Any]:
        steps = int(context.request.input["steps"])
        try:
            for step in range(1, steps + 1):
                context.report_progress(step, steps, f"step {step}")
                context.log("info", f"tick {step}")
                context.log("debug", f"debug {step}")
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            record("async-cancelled")
            raise
        record("async-finished")
        return {"steps": steps}


class SyncTicker(Engine):
    id = "test.sync_ticker"
    name = "Sync ticker"
    description = "Report progress every 0.1 s, polling the signal."
    input_schema = STEPS

    def execute(self, context: EngineContext) -> dict[str, Any]:
        steps = int(context.request.input["steps"])
        for step in range(1, steps + 1):
            context.report_progress(step, steps, None)
            if context.signal.wait(0.1):
                record("sync-cancelled")
                return {"steps": step}
        record("sync-finished")
        return {"steps": steps}


class Quiet(Engine):
    id = "test.quiet"
    name = "Quiet"
    description = "Sleep without reporting anything."
    input_schema = {
        "type": "object",
        "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 10}},
        "required": ["seconds"],
        "additionalProperties": False,
    }

    async def execute(self, context: EngineContext) -> dict[str, Any]:
        await asyncio.sleep(float(context.request.input["seconds"]))
        return {"slept": True}


ENGINES = (AsyncTicker, SyncTicker, Quiet)
