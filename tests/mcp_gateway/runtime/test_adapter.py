"""Engines as MCP tools, and their return values as ``CallToolResult``."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from demo.basic import Add, Echo, Fail, Reject, WhoAmI
from demo.conformance import JsonSchema202012
from engines_app.context import EngineContext, Principal
from engines_app.engine import Engine, Hints, Icon, engine
from engines_app.errors import EngineError
from engines_app.registry import EngineRegistry
from engines_app.results import Audio, Image, Resource, RichResult, Text
from mcp_gateway.catalog import build_catalog
from mcp_gateway.fingerprint import fingerprint
from mcp_gateway.models import Tenant
from mcp_gateway.runtime import adapter

ALICE = Principal(tenant="acme", user="alice", scopes=frozenset({"mcp:tools"}))
ANONYMOUS = Principal(tenant="acme")


def run(
    target: Any, arguments: dict[str, Any] | None = None, principal=ALICE
) -> dict[str, Any]:
    arguments = {} if arguments is None else arguments
    context = adapter.build_context(
        target, arguments, principal=principal, config={}, deadline_seconds=5.0
    )
    result = adapter.execute(target, arguments, context)
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def payload(result: dict[str, Any]) -> Any:
    return json.loads(result["content"][0]["text"])


def returning(value: Any, **options: Any) -> Any:
    @engine("test.value", name="Value", description="Return a fixed value.", **options)
    def value_engine(context: EngineContext) -> Any:
        return value

    return value_engine


# -- Tools ------------------------------------------------------------------


def test_tool_carries_name_title_description_and_schema():
    tool = adapter.build_tool(Echo())

    assert tool.name == "demo_echo"
    assert tool.title == "Echo"
    assert tool.description == "Return the text it is given."
    assert tool.input_schema == Echo.input_schema
    assert tool.output_schema is None


def test_hints_become_annotations():
    annotations = adapter.build_tool(WhoAmI()).annotations

    assert annotations is not None
    dumped = annotations.model_dump(by_alias=True, exclude_none=True)
    assert dumped == {"readOnlyHint": True, "idempotentHint": True}


def test_no_hints_means_no_annotations():
    assert adapter.build_tool(Fail()).annotations is None


def test_missing_input_schema_defaults_to_a_closed_object():
    tool = adapter.build_tool(Fail())

    assert tool.input_schema == {"type": "object", "additionalProperties": False}


def test_input_schema_is_kept_verbatim():
    tool = adapter.build_tool(JsonSchema202012())

    assert tool.input_schema == JsonSchema202012.input_schema
    assert "$defs" in tool.input_schema
    assert "$schema" in tool.input_schema


def test_output_schema_and_icons_are_published():
    icon = Icon("https://example.com/i.png", "image/png", ("48x48",))
    target = returning({}, output_schema=Add.output_schema, icons=(icon,))

    tool = adapter.build_tool(target)

    assert tool.output_schema == Add.output_schema
    assert tool.icons is not None
    assert tool.icons[0].src == "https://example.com/i.png"
    assert tool.icons[0].mime_type == "image/png"
    assert tool.icons[0].sizes == ["48x48"]


def header_schema(annotation: Any, kind: str = "string") -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"region": {"type": kind, "x-mcp-header": annotation}},
    }


def test_a_valid_x_mcp_header_annotation_is_accepted():
    tool = adapter.build_tool(returning({}, input_schema=header_schema("Region")))

    assert tool.input_schema["properties"]["region"]["x-mcp-header"] == "Region"


@pytest.mark.parametrize(
    "schema",
    [
        header_schema("has space"),
        header_schema(""),
        header_schema(3),
        header_schema("Region", kind="number"),
        {"type": "object", "x-mcp-header": "Root"},
        {
            "type": "object",
            "properties": {
                "a": {"type": "string", "x-mcp-header": "Same"},
                "b": {"type": "string", "x-mcp-header": "same"},
            },
        },
    ],
)
def test_an_invalid_x_mcp_header_annotation_makes_the_tool_invalid(schema):
    with pytest.raises(adapter.InvalidToolError, match=r"test\.value"):
        adapter.build_tool(returning({}, input_schema=schema))


@pytest.mark.django_db
def test_catalog_skips_an_invalid_engine_with_a_log_line(caplog):
    tenant = Tenant.objects.create(slug="adapter", name="Adapter")
    bad = returning({}, input_schema=header_schema("bad header"))
    registry = EngineRegistry([Echo(), bad])
    tenant.exposures.create(
        engine_id="demo.echo", tool_name="demo_echo", fingerprint=fingerprint(Echo())
    )
    tenant.exposures.create(engine_id="test.value", tool_name="test_value")

    with caplog.at_level(logging.ERROR, logger="mcp_gateway"):
        catalog = build_catalog(tenant, registry)

    assert list(catalog) == ["demo_echo"]
    assert "test.value" in caplog.text


# -- Results ------------------------------------------------------------------


def test_a_json_object_is_structured_content_plus_its_text():
    result = run(Add(), {"a": 1, "b": 2})

    assert result["structuredContent"] == {"sum": 3}
    assert result["content"] == [{"type": "text", "text": '{"sum":3}'}]
    assert result["isError"] is False


def test_other_json_values_are_text_only():
    result = run(returning(["é", 1, None]))

    assert "structuredContent" not in result
    assert result["content"][0]["text"] == '["é",1,null]'


def test_the_engine_sees_its_arguments_and_strategy():
    seen: list[EngineContext] = []

    @engine("test.seen", name="Seen", description="Record the context.")
    def record(context: EngineContext) -> dict[str, Any]:
        seen.append(context)
        return {}

    run(record)

    assert seen[0].request.input == {}
    assert seen[0].request.strategy == "test.seen"
    assert seen[0].principal is ALICE
    assert seen[0].signal.remaining() is not None


def test_rich_results_map_to_content_blocks():
    rich = RichResult(
        (
            Text("hi"),
            Image(b"\x89PNG", "image/png"),
            Audio("UklGRg==", "audio/wav"),
            Resource(uri="test://t", mime_type="text/plain", text="body"),
            Resource(
                uri="test://b", mime_type="application/octet-stream", blob=b"\x00"
            ),
        ),
        structured={"ok": True},
    )

    result = run(returning(rich))

    assert result["content"] == [
        {"type": "text", "text": "hi"},
        {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {
            "type": "resource",
            "resource": {"uri": "test://t", "mimeType": "text/plain", "text": "body"},
        },
        {
            "type": "resource",
            "resource": {
                "uri": "test://b",
                "mimeType": "application/octet-stream",
                "blob": "AA==",
            },
        },
    ]
    assert result["structuredContent"] == {"ok": True}
    assert result["isError"] is False


def test_a_rich_error_result_is_an_error():
    result = run(returning(RichResult((Text("no"),), is_error=True)))

    assert result["isError"] is True


def test_engine_error_is_a_tool_error_with_its_code_and_message():
    result = run(Reject())

    assert result["isError"] is True
    assert "structuredContent" not in result
    assert payload(result) == {
        "code": "REJECTED",
        "message": "This request was rejected by the engine.",
    }


def test_internal_failure_hides_the_secret_and_logs_the_traceback(caplog):
    with caplog.at_level(logging.ERROR, logger="mcp_gateway"):
        result = run(Fail())

    assert result["isError"] is True
    assert payload(result) == {
        "code": "EXECUTION_FAILED",
        "message": "Tool execution failed.",
    }
    assert "SECRET" not in json.dumps(result)
    assert "SECRET" in caplog.text
    assert "Traceback" in caplog.text


def test_output_schema_violation_is_an_internal_failure(caplog):
    target = returning({"sum": "not a number"}, output_schema=Add.output_schema)

    with caplog.at_level(logging.ERROR, logger="mcp_gateway"):
        result = run(target)

    assert payload(result)["code"] == "EXECUTION_FAILED"
    assert "not a number" not in json.dumps(result)
    assert "output_schema" in caplog.text


def test_a_value_that_is_not_json_is_an_internal_failure():
    result = run(returning({"when": object()}))

    assert payload(result)["code"] == "EXECUTION_FAILED"


def test_invalid_arguments_are_a_tool_error_naming_the_path():
    result = run(Echo(), {"text": 3})

    assert result["isError"] is True
    body = payload(result)
    assert body["code"] == "INVALID_ARGUMENTS"
    assert body["message"].startswith("Invalid arguments at /text:")


def test_missing_required_arguments_are_reported():
    body = payload(run(Add(), {"a": 1}))

    assert body["code"] == "INVALID_ARGUMENTS"
    assert "'b' is a required property" in body["message"]


def test_arguments_to_an_engine_without_schema_are_refused():
    body = payload(run(Fail(), {"x": 1}))

    assert body["code"] == "INVALID_ARGUMENTS"


# -- Access rule ----------------------------------------------------------------


class Guarded(Engine):
    id = "test.guarded"
    name = "Guarded"
    description = "Only for alice."

    def access(self, principal: Principal) -> bool:  # type: ignore[override]
        return principal.user == "alice"

    def execute(self, context: EngineContext) -> dict[str, Any]:
        return {"ok": True}


def test_access_rule_allows_the_principal_it_accepts():
    assert run(Guarded())["structuredContent"] == {"ok": True}


def test_access_rule_refusal_is_forbidden():
    bob = Principal(tenant="acme", user="bob")

    assert payload(run(Guarded(), principal=bob))["code"] == "FORBIDDEN"


def test_anonymous_principals_are_refused_by_any_access_rule():
    allow_all = returning({}, access=lambda principal: True)

    assert payload(run(allow_all, principal=ANONYMOUS))["code"] == "FORBIDDEN"


# -- Async ------------------------------------------------------------------------


def arun(target: Any, arguments: dict[str, Any], seconds: float = 5.0) -> Any:
    context = adapter.build_context(
        target, arguments, principal=ALICE, config={}, deadline_seconds=seconds
    )
    result = asyncio.run(adapter.aexecute(target, arguments, context))
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def test_aexecute_runs_sync_engines():
    assert arun(Add(), {"a": 2, "b": 2})["structuredContent"] == {"sum": 4}


def test_async_engines_run_on_both_paths():
    @engine("test.async", name="Async", description="An async engine.")
    async def slow_add(context: EngineContext) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"done": True}

    assert arun(slow_add, {})["structuredContent"] == {"done": True}
    assert run(slow_add)["structuredContent"] == {"done": True}


def test_an_async_engine_past_its_deadline_is_stopped():
    @engine("test.sleepy", name="Sleepy", description="Sleep too long.")
    async def sleepy(context: EngineContext) -> dict[str, Any]:
        await asyncio.sleep(5)
        return {}

    result = arun(sleepy, {}, seconds=0.05)

    assert payload(result)["code"] == "TIMEOUT"


def test_engine_error_from_an_async_engine():
    @engine("test.arej", name="Async reject", description="Reject.")
    async def rejecting(context: EngineContext) -> Any:
        raise EngineError("NOPE", "No.")

    assert payload(arun(rejecting, {})) == {"code": "NOPE", "message": "No."}


def test_hints_dataclass_defaults_publish_nothing():
    assert adapter.build_tool(returning({}, hints=Hints())).annotations is None
