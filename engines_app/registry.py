"""The in-code registry of installed engines."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from engines_app.engine import SECRET_NAME, EngineLike
from engines_app.errors import DuplicateRegistrationError, InvalidEngineError

_SCHEMA_FIELDS = ("input_schema", "output_schema")


def validate_engine(obj: Any) -> None:
    """Check ``obj`` against the engine contract.

    Raises:
        InvalidEngineError: naming the engine and what is wrong.
    """
    engine_id = getattr(obj, "id", None)
    if not isinstance(engine_id, str) or not engine_id:
        raise InvalidEngineError(
            f"Engine id must be a non-empty string, got {engine_id!r}."
        )
    for attr in ("name", "description", "version"):
        value = getattr(obj, attr, None)
        if not isinstance(value, str) or not value.strip():
            raise InvalidEngineError(
                f"Engine {engine_id!r}: {attr} must be a non-empty string."
            )
    if not callable(getattr(obj, "execute", None)):
        raise InvalidEngineError(f"Engine {engine_id!r}: execute must be callable.")
    for attr in _SCHEMA_FIELDS:
        _validate_schema(engine_id, attr, getattr(obj, attr, None))
    _validate_secrets(engine_id, getattr(obj, "secrets", ()))


def _validate_secrets(engine_id: str, names: Any) -> None:
    if isinstance(names, str) or not isinstance(names, tuple | list | frozenset):
        raise InvalidEngineError(
            f"Engine {engine_id!r}: secrets must be a tuple of names."
        )
    for name in names:
        if not isinstance(name, str) or not SECRET_NAME.fullmatch(name):
            raise InvalidEngineError(
                f"Engine {engine_id!r}: secret name {name!r} must be 1 to 64 "
                "letters, digits or underscores, not starting with a digit."
            )


def _validate_schema(engine_id: str, attr: str, schema: Any) -> None:
    if schema is None:
        return
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise InvalidEngineError(
            f"Engine {engine_id!r}: {attr} must be a JSON Schema "
            "whose root type is object."
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise InvalidEngineError(
            f"Engine {engine_id!r}: {attr} is not a valid "
            f"JSON Schema 2020-12 ({exc.message})."
        ) from exc


class EngineRegistry:
    """Engines by id; iteration is in id order, so it is stable."""

    def __init__(self, engines: Iterable[EngineLike] = ()) -> None:
        self._engines: dict[str, EngineLike] = {}
        for item in engines:
            self.register(item)

    def register(self, engine: Any) -> Any:
        """Add an engine, or an engine class (instantiated without arguments).

        Returns its argument, so this also works as a class decorator.

        Raises:
            InvalidEngineError: the object breaks the engine contract.
            DuplicateRegistrationError: the id is taken.
        """
        instance = engine() if isinstance(engine, type) else engine
        validate_engine(instance)
        if instance.id in self._engines:
            raise DuplicateRegistrationError(instance.id)
        self._engines[instance.id] = instance
        return engine

    def unregister(self, engine_id: str) -> bool:
        return self._engines.pop(engine_id, None) is not None

    def get(self, engine_id: str) -> EngineLike | None:
        return self._engines.get(engine_id)

    def ids(self) -> list[str]:
        return sorted(self._engines)

    def __contains__(self, engine_id: object) -> bool:
        return engine_id in self._engines

    def __iter__(self) -> Iterator[EngineLike]:
        return (self._engines[key] for key in sorted(self._engines))

    def __len__(self) -> int:
        return len(self._engines)


default_registry = EngineRegistry()
