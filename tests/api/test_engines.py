from __future__ import annotations

from typing import Any

from engines_app.registry import default_registry


def test_installed_engines_are_listed_with_tool_names_and_hints(api, db):
    body = api.get("/api/engines/", {"page_size": 200}).json()

    assert body["count"] == len(default_registry)
    engines = {e["id"]: e for e in body["results"]}
    echo = engines["demo.echo"]
    assert echo["tool_name"] == "demo_echo"
    assert echo["version"] == "1.0.0"
    assert echo["input_schema"]["required"] == ["text"]
    assert echo["output_schema"] is None
    assert echo["hints"]["read_only"] is True
    assert engines["demo:echo"]["tool_name"] == "demo_echo"


def test_engines_are_searchable(api, db):
    body = api.get("/api/engines/", {"search": "ECHO", "page_size": 200}).json()

    def mentions(engine: Any) -> bool:
        fields = (engine.id, engine.name, engine.description)
        return any("echo" in str(field).lower() for field in fields)

    expected = {engine.id for engine in default_registry if mentions(engine)}
    assert {"demo.echo", "demo:echo"} <= expected  # case-insensitive
    assert len(expected) < len(default_registry)  # and it filters
    assert {e["id"] for e in body["results"]} == expected
