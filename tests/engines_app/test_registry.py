from __future__ import annotations

from typing import Any

import pytest

from engines_app.context import EngineContext
from engines_app.engine import Engine, FunctionEngine, engine
from engines_app.errors import DuplicateRegistrationError, InvalidEngineError
from engines_app.registry import EngineRegistry


def make(engine_id: Any = "x.one", **fields: Any) -> FunctionEngine:
    options: dict[str, Any] = {"name": "One", "description": "The first."}
    options.update(fields)
    return FunctionEngine(id=engine_id, function=lambda context: None, **options)


def test_register_returns_the_engine_and_get_finds_it(registry):
    one = make()

    returned = registry.register(one)

    assert returned is one
    assert registry.get("x.one") is one
    assert "x.one" in registry
    assert len(registry) == 1


def test_get_and_membership_of_an_unknown_id(registry):
    assert registry.get("nope") is None
    assert "nope" not in registry
    assert 3 not in registry


def test_unregister_reports_whether_something_was_removed(registry):
    registry.register(make())

    assert registry.unregister("x.one") is True
    assert registry.unregister("x.one") is False
    assert "x.one" not in registry


def test_iteration_is_in_id_order_whatever_the_registration_order(registry):
    for engine_id in ("b.two", "c.three", "a.one"):
        registry.register(make(engine_id))

    assert [e.id for e in registry] == ["a.one", "b.two", "c.three"]
    assert registry.ids() == ["a.one", "b.two", "c.three"]


def test_a_registry_can_be_built_from_engines():
    registry = EngineRegistry([make("b"), make("a")])

    assert registry.ids() == ["a", "b"]


def test_a_duplicate_id_is_refused(registry):
    registry.register(make())

    with pytest.raises(DuplicateRegistrationError, match=r"x\.one") as info:
        registry.register(make())

    assert info.value.engine_id == "x.one"


@pytest.mark.parametrize("engine_id", [None, "", 3])
def test_an_id_that_is_not_a_non_empty_string_is_refused(registry, engine_id):
    with pytest.raises(InvalidEngineError, match="id must be a non-empty string"):
        registry.register(make(engine_id))

    assert len(registry) == 0


@pytest.mark.parametrize("description", ["", "   ", None])
def test_an_empty_description_is_refused(registry, description):
    with pytest.raises(InvalidEngineError, match=r"'x\.one'.*description"):
        registry.register(make(description=description))


def test_a_missing_description_is_refused(registry):
    class NoDescription(Engine):
        id = "x.nodesc"
        name = "No description"

    with pytest.raises(InvalidEngineError, match=r"'x\.nodesc'.*description"):
        registry.register(NoDescription())


def test_an_object_without_execute_is_refused(registry):
    class NotAnEngine:
        id = "x.noexec"
        name = "No execute"
        description = "Cannot run."
        version = "1"

    with pytest.raises(InvalidEngineError, match=r"'x\.noexec'.*execute"):
        registry.register(NotAnEngine())


@pytest.mark.parametrize("attr", ["input_schema", "output_schema"])
@pytest.mark.parametrize(
    "schema", [{"type": "array"}, {"properties": {}}, ["type", "object"], True]
)
def test_a_schema_whose_root_is_not_an_object_is_refused(registry, attr, schema):
    with pytest.raises(InvalidEngineError, match=f"'x.one'.*{attr}.*root type"):
        registry.register(make(**{attr: schema}))


def test_a_broken_2020_12_schema_is_refused_naming_the_engine(registry):
    broken = {"type": "object", "properties": {"a": {"type": "nope"}}}

    with pytest.raises(InvalidEngineError, match=r"'x\.one'.*input_schema.*2020-12"):
        registry.register(make(input_schema=broken))

    assert "x.one" not in registry


def test_a_valid_schema_with_2020_12_keywords_is_accepted(registry):
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"n": {"type": "integer"}},
        "properties": {"n": {"$ref": "#/$defs/n"}},
        "additionalProperties": False,
    }

    registry.register(make(input_schema=schema, output_schema={"type": "object"}))

    assert "x.one" in registry


def test_register_works_as_a_decorator(registry: EngineRegistry) -> None:
    @registry.register
    @engine("x.decorated", name="Decorated", description="Made by decorators.")
    def decorated(context: EngineContext) -> Any:
        return 1

    assert registry.get("x.decorated") is decorated
