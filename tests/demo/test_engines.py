from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from demo import basic, conformance
from engines_app.context import EngineContext, EngineRequest, Principal, Signal
from engines_app.engine import Engine, is_async_engine
from engines_app.errors import EngineError
from engines_app.registry import EngineRegistry, default_registry
from engines_app.results import Audio, Image, Resource, RichResult, Text


def run(
    engine: Engine,
    principal: Principal | None = None,
    signal: Signal | None = None,
    progress: list[Any] | None = None,
    **arguments: Any,
) -> Any:
    sink = progress if progress is not None else []
    context = EngineContext(
        request=EngineRequest(strategy=engine.id, input=arguments),
        principal=principal or Principal(tenant="acme"),
        signal=signal or Signal(),
        progress_sink=lambda *args: sink.append(args),
    )
    return engine.execute(context)


def test_every_demo_and_conformance_engine_passes_registration():
    registry = EngineRegistry(cls() for cls in basic.ENGINES + conformance.ENGINES)

    assert len(registry) == len(basic.ENGINES) + len(conformance.ENGINES)


def test_the_test_settings_install_the_demo_engines_and_the_colliding_one():
    assert {"demo.echo", "demo.add", "demo:echo", "test_simple_text"} <= set(
        default_registry.ids()
    )


def test_echo_returns_its_text():
    assert run(basic.Echo(), text="hi") == {"text": "hi"}
    assert basic.Echo.hints.read_only is True
    assert basic.Echo.hints.idempotent is True


def test_add_returns_the_sum_and_declares_an_output_schema():
    assert run(basic.Add(), a=2, b=3.5) == {"sum": 5.5}
    assert basic.Add.output_schema is not None


def test_whoami_reports_the_principal():
    principal = Principal(
        tenant="acme", user="alice", scopes=frozenset({"mcp:tools", "a:b"})
    )

    assert run(basic.WhoAmI(), principal=principal) == {
        "tenant": "acme",
        "user": "alice",
        "scopes": ["a:b", "mcp:tools"],
    }


def test_whoami_reports_an_anonymous_principal_with_a_null_user():
    assert run(basic.WhoAmI()) == {"tenant": "acme", "user": None, "scopes": []}


def test_fail_raises_an_internal_error_with_a_secret_message():
    with pytest.raises(RuntimeError, match="SECRET") as info:
        run(basic.Fail())

    assert not isinstance(info.value, EngineError)


def test_reject_raises_an_engine_error_with_a_public_message():
    with pytest.raises(EngineError) as info:
        run(basic.Reject())

    assert info.value.code == "REJECTED"
    assert "SECRET" not in info.value.message


def test_slow_waits_and_reports_progress():
    progress: list[Any] = []

    result = run(basic.Slow(), progress=progress, seconds=0.1)

    assert result == {"waited": 0.1}
    assert progress == [(0.1, 0.1, None)]


def test_slow_stops_when_its_signal_is_cancelled():
    signal = Signal()
    threading.Timer(0.05, signal.cancel).start()
    started = time.monotonic()

    with pytest.raises(EngineError) as info:
        run(basic.Slow(), signal=signal, seconds=20)

    assert info.value.code == "CANCELLED"
    assert time.monotonic() - started < 5


def test_slow_refuses_more_than_thirty_seconds_by_schema():
    assert basic.Slow.input_schema is not None
    assert basic.Slow.input_schema["properties"]["seconds"]["maximum"] == 30


def test_the_conformance_pack_uses_the_suites_tool_names():
    assert {cls.id for cls in conformance.ENGINES} == {
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_error_handling",
        "test_tool_with_logging",
        "test_tool_with_progress",
        "json_schema_2020_12_tool",
        "test_input_required_result_elicitation",
        "test_input_required_result_request_state",
        "test_input_required_result_multi_round",
        "test_input_required_result_tampered_state",
        "test_logging_tool",
        "test_streaming_elicitation",
        "test_missing_capability",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_capabilities",
        "test_sampling",
        "test_changing_tool",
        "test_trigger_tool_change",
        "test_custom_header",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
    }


def test_the_conformance_content_engines_return_rich_results():
    image = run(conformance.ImageContent())
    audio = run(conformance.AudioContent())
    mixed = run(conformance.MultipleContentTypes())

    assert isinstance(run(conformance.SimpleText()).content[0], Text)
    assert isinstance(image.content[0], Image)
    assert image.content[0].mime_type == "image/png"
    assert isinstance(audio.content[0], Audio)
    assert audio.content[0].mime_type == "audio/wav"
    assert isinstance(run(conformance.EmbeddedResource()).content[0], Resource)
    assert [type(block) for block in mixed.content] == [Text, Image, Resource]


def test_the_conformance_error_engine_raises_an_engine_error():
    with pytest.raises(EngineError, match="intentionally"):
        run(conformance.ErrorHandling())


def test_the_logging_and_progress_engines_are_async():
    assert is_async_engine(conformance.ToolWithLogging())
    assert is_async_engine(conformance.ToolWithProgress())


def test_the_2020_12_schema_keeps_its_keywords():
    schema = conformance.JsonSchema202012.input_schema

    assert schema is not None
    assert {"$schema", "$defs", "additionalProperties"} <= set(schema)
    assert schema["additionalProperties"] is False


def test_rich_results_encode_bytes_as_base64():
    image = Image(b"\x89PNG", "image/png")
    already = Audio("AAAA", "audio/wav")

    assert image.base64 == "iVBORw=="
    assert already.base64 == "AAAA"
    assert RichResult((Text("x"),)).structured is None
