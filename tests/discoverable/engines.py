"""Registers one engine on import, as a site's ``engines`` module would."""

from __future__ import annotations

from typing import Any

from engines_app.context import EngineContext
from engines_app.engine import engine
from engines_app.registry import default_registry


@default_registry.register
@engine("discoverable.hello", name="Hello", description="Say hello.")
def hello(context: EngineContext) -> Any:
    return {"hello": context.principal.tenant}
