"""Errors of the engine side.

``EngineError`` is the one failure whose message may reach a caller; the
others are raised by the registry when an engine is refused.
"""

from __future__ import annotations


class EngineError(Exception):
    """A failure an engine reports to its caller, with a public message."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class RegistryError(Exception):
    """Base class of the registry's refusals."""


class InvalidEngineError(RegistryError):
    """The object does not satisfy the engine contract."""


class DuplicateRegistrationError(RegistryError):
    """An engine with this id is already registered."""

    def __init__(self, engine_id: str) -> None:
        self.engine_id = engine_id
        super().__init__(f"An engine with id {engine_id!r} is already registered.")
