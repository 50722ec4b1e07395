"""200 trivial engines for the ``tools/list`` benchmark.

Registered only when ``MCP_ENGINES`` names ``benchmarks.engines.ENGINES``.
"""

from __future__ import annotations

from typing import Any

from benchmarks import toolset
from engines_app.context import EngineContext
from engines_app.engine import Engine


def _generated(index: int) -> type[Engine]:
    def execute(self: Engine, context: EngineContext) -> dict[str, Any]:
        return {"text": context.request.input["text"]}

    attributes = {
        "id": toolset.generated_id(index),
        "name": toolset.generated_name(index),
        "description": toolset.generated_description(index),
        "input_schema": toolset.generated_schema(),
        "execute": execute,
    }
    return type(f"Generated{index:03d}", (Engine,), attributes)


ENGINES = tuple(_generated(index) for index in range(toolset.GENERATED_COUNT))
