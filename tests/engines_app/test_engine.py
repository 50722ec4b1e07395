from __future__ import annotations

from typing import Any

from engines_app.context import EngineContext, EngineRequest, Principal
from engines_app.engine import (
    Engine,
    EngineLike,
    FunctionEngine,
    Hints,
    Icon,
    engine,
    is_async_engine,
)
from engines_app.errors import EngineError


def context_for(engine_id: str, **arguments: Any) -> EngineContext:
    return EngineContext(
        request=EngineRequest(strategy=engine_id, input=arguments),
        principal=Principal(tenant="acme"),
    )


def test_the_decorator_makes_a_function_engine_with_its_fields():
    hints = Hints(read_only=True)
    icons = (Icon("https://example.com/i.png", "image/png", ("48x48",)),)

    @engine(
        "x.double",
        name="Double",
        description="Double a number.",
        version="2.0.0",
        input_schema={"type": "object"},
        hints=hints,
        icons=icons,
    )
    def double(context: EngineContext) -> Any:
        return {"n": context.request.input["n"] * 2}

    assert isinstance(double, FunctionEngine)
    assert isinstance(double, EngineLike)
    assert (double.id, double.name, double.version) == ("x.double", "Double", "2.0.0")
    assert double.description == "Double a number."
    assert double.hints is hints
    assert double.icons == icons
    assert double.execute(context_for("x.double", n=4)) == {"n": 8}


def test_the_decorator_defaults_version_schemas_and_hints():
    @engine("x.plain", name="Plain", description="Plain.")
    def plain(context: EngineContext) -> Any:
        return None

    assert plain.version == "1.0.0"
    assert plain.input_schema is None
    assert plain.output_schema is None
    assert plain.hints == Hints()
    assert plain.access is None


def test_an_async_function_engine_is_detected():
    @engine("x.async", name="Async", description="Async.")
    async def run(context: EngineContext) -> Any:
        return 1

    @engine("x.sync", name="Sync", description="Sync.")
    def walk(context: EngineContext) -> Any:
        return 1

    assert run.is_async is True
    assert is_async_engine(run) is True
    assert walk.is_async is False
    assert is_async_engine(walk) is False


def test_an_async_class_engine_is_detected():
    class Async(Engine):
        id = "x.async"
        name = "Async"
        description = "Async."

        async def execute(self, context: EngineContext) -> Any:
            return 1

    class Sync(Engine):
        id = "x.sync"
        name = "Sync"
        description = "Sync."

        def execute(self, context: EngineContext) -> Any:
            return 1

    assert is_async_engine(Async()) is True
    assert is_async_engine(Sync()) is False


def test_an_engine_subclass_has_sensible_defaults_and_repr():
    class Minimal(Engine):
        id = "x.minimal"
        name = "Minimal"
        description = "Minimal."

    minimal = Minimal()

    assert minimal.version == "1.0.0"
    assert minimal.hints == Hints()
    assert minimal.icons == ()
    assert repr(minimal) == "<Minimal 'x.minimal'>"


def test_engine_error_carries_a_code_and_a_public_message():
    error = EngineError("NOPE", "Not today.")

    assert error.code == "NOPE"
    assert error.message == "Not today."
    assert str(error) == "NOPE: Not today."
