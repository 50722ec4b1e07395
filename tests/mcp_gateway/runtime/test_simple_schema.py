"""The fast check accepts only what the full JSON Schema validator accepts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mcp_gateway.runtime.simple_schema import plain_check

TYPES = ["string", "integer", "number", "boolean", "object", "array", "null"]
NAMES = st.sampled_from(["a", "b", "c", "text", "n"])
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def simple_schemas(draw: Any) -> dict[str, Any]:
    properties = draw(
        st.dictionaries(NAMES, st.sampled_from(TYPES).map(lambda t: {"type": t}))
    )
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties and draw(st.booleans()):
        schema["required"] = draw(
            st.lists(st.sampled_from(sorted(properties)), unique=True)
        )
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    return schema


@settings(max_examples=400, deadline=None)
@given(schema=simple_schemas(), arguments=st.dictionaries(NAMES, JSON, max_size=4))
def test_plainly_valid_means_valid(schema: dict[str, Any], arguments: Any) -> None:
    check = plain_check(schema)
    assert check is not None
    if check(arguments):
        assert Draft202012Validator(schema).is_valid(arguments)


ECHO = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "What to echo."}},
    "required": ["text"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("arguments", "plain"),
    [
        ({"text": "hi"}, True),
        ({}, False),  # required
        ({"text": 5}, False),  # wrong type
        ({"text": "hi", "extra": 1}, False),  # closed
        ([], False),  # not an object
    ],
)
def test_a_closed_flat_schema(arguments: Any, plain: bool) -> None:
    check = plain_check(ECHO)
    assert check is not None
    assert check(arguments) is plain


def test_integers_and_numbers_leave_edge_cases_to_the_full_validator() -> None:
    check = plain_check({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert check is not None
    assert check({"n": 3}) is True
    assert check({"n": True}) is False  # a bool is not an integer
    assert check({"n": 3.0}) is False  # valid, but the full validator decides
    assert Draft202012Validator({"type": "integer"}).is_valid(3.0)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        {"type": "object", "properties": {"a": {"enum": [1, 2]}}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "required": "a"},
        {"type": "array"},
        {"properties": {"a": {"type": "string"}}},
        {"type": "object", "$defs": {}, "properties": {}},
    ],
)
def test_other_schemas_are_not_simple(schema: dict[str, Any]) -> None:
    assert plain_check(schema) is None
