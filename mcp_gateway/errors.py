"""Typed errors of the bookkeeping service, shown as messages by every UI."""

from __future__ import annotations

from typing import ClassVar


class BookkeepingError(Exception):
    """Base class; ``code`` is the stable machine-readable name."""

    code: ClassVar[str] = "bookkeeping_error"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class UnknownEngine(BookkeepingError):
    code = "unknown_engine"

    def __init__(self, engine_id: str) -> None:
        self.engine_id = engine_id
        super().__init__(f"No engine with id {engine_id!r} is installed.")


class InvalidEngine(BookkeepingError):
    code = "invalid_engine"


class DuplicateExposure(BookkeepingError):
    code = "duplicate_exposure"

    def __init__(self, tenant: str, engine_id: str) -> None:
        self.engine_id = engine_id
        super().__init__(
            f"Engine {engine_id!r} is already exposed to tenant {tenant!r}."
        )


class ToolNameCollision(BookkeepingError):
    code = "tool_name_collision"

    def __init__(self, tool: str, engine_id: str, other_engine_id: str) -> None:
        self.tool_name = tool
        self.engine_ids = (engine_id, other_engine_id)
        super().__init__(
            f"Engines {engine_id!r} and {other_engine_id!r} both derive the tool "
            f"name {tool!r}; only one of them can be exposed to a tenant."
        )


class NotExposed(BookkeepingError):
    code = "not_exposed"

    def __init__(self, tenant: str, engine_id: str) -> None:
        self.engine_id = engine_id
        super().__init__(f"Engine {engine_id!r} is not exposed to tenant {tenant!r}.")
