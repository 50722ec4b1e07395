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
    example). Engines already registered from the same object (the instance,
    or an instance of the same class) are skipped, so loading twice is
    harmless.
    """
    for path in paths:
        for source, engine in _engines_of(import_string(path)):
            registered = registry.get(getattr(engine, "id", None) or "")
            if registered is not None and source in (registered, type(registered)):
                continue
            registry.register(engine)


def _engines_of(obj: Any) -> list[tuple[Any, Any]]:
    items = list(obj) if isinstance(obj, list | tuple) else [obj]
    return [(item, item() if isinstance(item, type) else item) for item in items]
