"""Engines installed only by the test settings."""

from __future__ import annotations

from typing import Any

from engines_app.context import EngineContext
from engines_app.engine import Engine


class ColonEcho(Engine):
    """Derives the same tool name as ``demo.echo``: ``demo_echo``."""

    id = "demo:echo"
    name = "Colon echo"
    description = "An engine whose tool name collides with demo.echo."

    def execute(self, context: EngineContext) -> Any:
        return {"text": "colon"}


COLLIDING = (ColonEcho,)
