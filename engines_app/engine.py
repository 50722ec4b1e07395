"""The engine contract: a plain object with an id and an ``execute``.

Imports nothing from Django, from ``mcp_gateway`` or from ``mcp``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from engines_app.context import EngineContext, Principal

JsonSchema = Mapping[str, Any]
Execute = Callable[[EngineContext], Any | Awaitable[Any]]
AccessRule = Callable[[Principal], bool]
SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""What a secret's name looks like (an environment variable's shape)."""


@dataclass(frozen=True)
class Hints:
    """Behaviour hints a client may show; ``None`` means "not said"."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None


@dataclass(frozen=True)
class Icon:
    src: str
    mime_type: str | None = None
    sizes: tuple[str, ...] = ()


@runtime_checkable
class EngineLike(Protocol):
    """What the registry requires of any engine object.

    Read-only members, so class attributes and frozen dataclasses qualify.
    """

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def version(self) -> str: ...

    def execute(self, context: EngineContext) -> Any: ...


class Engine:
    """Convenient base class: set the class attributes, write ``execute``.

    ``execute`` may be a plain method or ``async def``. ``access`` decides,
    per call, whether a principal may run the engine at all.
    """

    id: ClassVar[str]
    name: ClassVar[str]
    description: ClassVar[str]
    version: ClassVar[str] = "1.0.0"
    input_schema: ClassVar[JsonSchema | None] = None
    output_schema: ClassVar[JsonSchema | None] = None
    hints: ClassVar[Hints] = Hints()
    icons: ClassVar[tuple[Icon, ...]] = ()
    access: ClassVar[AccessRule | None] = None
    deadline_seconds: ClassVar[float | None] = None
    """Overrides the gateway's ``ENGINE_DEADLINE_SECONDS`` for this engine."""
    secrets: ClassVar[tuple[str, ...]] = ()
    """Names of the per-tenant secrets ``execute`` reads from
    ``context.secrets``; a call while one is unset answers an error naming it."""
    blocking: ClassVar[bool] = True
    """``False`` promises a sync ``execute`` never waits (no I/O, no locks, no
    database) and returns in microseconds: it then runs in the request's own
    thread instead of the engine pool, and its deadline is cooperative only."""

    def execute(self, context: EngineContext) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id!r}>"


@dataclass(frozen=True, eq=False)
class FunctionEngine:
    """An engine made from a function by :func:`engine`."""

    id: str
    name: str
    description: str
    function: Execute
    version: str = "1.0.0"
    input_schema: JsonSchema | None = None
    output_schema: JsonSchema | None = None
    hints: Hints = Hints()
    icons: tuple[Icon, ...] = ()
    access: AccessRule | None = None
    blocking: bool = True
    secrets: tuple[str, ...] = ()

    def execute(self, context: EngineContext) -> Any:
        return self.function(context)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.function)


def engine(
    id: str,
    *,
    name: str,
    description: str,
    version: str = "1.0.0",
    input_schema: JsonSchema | None = None,
    output_schema: JsonSchema | None = None,
    hints: Hints = Hints(),
    icons: tuple[Icon, ...] = (),
    access: AccessRule | None = None,
    blocking: bool = True,
    secrets: tuple[str, ...] = (),
) -> Callable[[Execute], FunctionEngine]:
    """Turn a function of the context into an engine."""

    def wrap(function: Execute) -> FunctionEngine:
        return FunctionEngine(
            id=id,
            name=name,
            description=description,
            function=function,
            version=version,
            input_schema=input_schema,
            output_schema=output_schema,
            hints=hints,
            icons=icons,
            access=access,
            blocking=blocking,
            secrets=tuple(secrets),
        )

    return wrap


def is_async_engine(obj: Any) -> bool:
    """Tell whether the engine's ``execute`` must be awaited."""
    if isinstance(obj, FunctionEngine):
        return obj.is_async
    return inspect.iscoroutinefunction(obj.execute)


def required_secrets(obj: Any) -> tuple[str, ...]:
    """The secret names an engine declares, or ``()``."""
    names = getattr(obj, "secrets", ())
    if isinstance(names, str) or not isinstance(names, tuple | list | frozenset):
        return ()
    return tuple(str(name) for name in names)
