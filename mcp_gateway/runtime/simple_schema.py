"""Accept arguments that plainly meet a simple input schema, without jsonschema.

Most tools declare a flat object: ``properties`` each with one ``type``,
``required`` names, maybe ``additionalProperties: false``. Checking that
takes a dictionary walk; a full JSON Schema validator takes tens of
microseconds. :func:`plain_check` compiles such a schema into a predicate
that answers only "plainly valid" (``True``) or "ask the full validator"
(``False``); it never rejects on its own, so error messages and every
subtle case (``1.0`` as an integer, unicode lengths, formats) stay with the
full validator. Any schema outside that subset compiles to ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Mapping[str, Any]], bool]

_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: type(value) is str,
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) is int or type(value) is float,
    "boolean": lambda value: type(value) is bool,
    "object": lambda value: type(value) is dict,
    "array": lambda value: type(value) is list,
    "null": lambda value: value is None,
}
_ANNOTATIONS = frozenset({"title", "description", "$comment", "examples"})
_ROOT_KEYS = (
    frozenset({"type", "properties", "required", "additionalProperties", "$schema"})
    | _ANNOTATIONS
)
_PROPERTY_KEYS = frozenset({"type"}) | _ANNOTATIONS


def plain_check(schema: Mapping[str, Any]) -> Check | None:
    """A fast "plainly valid" predicate for ``schema``, or ``None``."""
    if not isinstance(schema, Mapping) or not schema.keys() <= _ROOT_KEYS:
        return None
    if schema.get("type") != "object":
        return None
    types = _property_types(schema.get("properties", {}))
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if types is None or not _names(required) or not isinstance(extra, bool):
        return None
    must = frozenset(required)
    closed = extra is False

    def check(arguments: Mapping[str, Any]) -> bool:
        if type(arguments) is not dict or not must <= arguments.keys():
            return False
        for name, value in arguments.items():
            accepts = types.get(name)
            if accepts is None:
                if closed or not isinstance(name, str):
                    return False
            elif not accepts(value):
                return False
        return True

    return check


def _property_types(properties: Any) -> dict[str, Callable[[Any], bool]] | None:
    if not isinstance(properties, Mapping):
        return None
    types = {}
    for name, subschema in properties.items():
        if not isinstance(subschema, Mapping) or not subschema.keys() <= _PROPERTY_KEYS:
            return None
        kind = subschema.get("type")
        accepts = _TYPES.get(kind) if isinstance(kind, str) else None
        if not isinstance(name, str) or accepts is None:
            return None
        types[name] = accepts
    return types


def _names(required: Any) -> bool:
    return isinstance(required, list) and all(isinstance(n, str) for n in required)
