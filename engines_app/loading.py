"""Fill a registry from installed apps and from dotted paths."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils.module_loading import autodiscover_modules, import_string

from engines_app.registry import EngineRegistry, default_registry


def autodiscover() -> None:
    """Import the ``engines`` module of every installed app, like the admin."""
    autodiscover_modules("engines")


def load_dotted(
    paths: Iterable[str], registry: EngineRegistry = default_registry
) -> None:
    """Register what each dotted path names: an engine, a class, or a pack.

    A pack is any iterable of engines (a list or tuple named ``ENGINES``, for
    example). Engines already registered under the same object are skipped,
    so loading twice is harmless.
    """
    for path in paths:
        for engine in _engines_of(import_string(path)):
            if registry.get(getattr(engine, "id", None) or "") is not engine:
                registry.register(engine)


def _engines_of(obj: Any) -> list[Any]:
    if isinstance(obj, type):
        return [obj()]
    if isinstance(obj, list | tuple):
        return [item() if isinstance(item, type) else item for item in obj]
    return [obj]
