"""Engines named after the tools the official MCP conformance suite calls."""

from __future__ import annotations

import asyncio
from typing import Any

from engines_app.context import EngineContext
from engines_app.engine import Engine
from engines_app.errors import EngineError
from engines_app.results import Audio, Image, Resource, RichResult, Text

# A 1x1 transparent PNG and a tiny silent WAV, as the suite only checks shape.
PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
    "60e6kgAAAABJRU5ErkJggg=="
)
WAV_SILENT = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
NO_ARGS = {"type": "object", "properties": {}, "additionalProperties": False}


class SimpleText(Engine):
    id = "test_simple_text"
    name = "Simple text"
    description = "Return one text block."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult:
        return RichResult((Text("This is a simple text response for testing."),))


class ImageContent(Engine):
    id = "test_image_content"
    name = "Image content"
    description = "Return one image block."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult:
        return RichResult((Image(PNG_1X1, "image/png"),))


class AudioContent(Engine):
    id = "test_audio_content"
    name = "Audio content"
    description = "Return one audio block."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult:
        return RichResult((Audio(WAV_SILENT, "audio/wav"),))


class EmbeddedResource(Engine):
    id = "test_embedded_resource"
    name = "Embedded resource"
    description = "Return one embedded text resource."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult:
        return RichResult(
            (
                Resource(
                    uri="test://embedded-resource",
                    mime_type="text/plain",
                    text="This is an embedded resource content.",
                ),
            )
        )


class MultipleContentTypes(Engine):
    id = "test_multiple_content_types"
    name = "Multiple content types"
    description = "Return text, an image and an embedded resource."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult:
        return RichResult(
            (
                Text("Multiple content types test:"),
                Image(PNG_1X1, "image/png"),
                Resource(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text='{"test": "data", "value": 123}',
                ),
            )
        )


class ErrorHandling(Engine):
    id = "test_error_handling"
    name = "Error handling"
    description = "Always fail with a tool error."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> Any:
        raise EngineError(
            "TEST_ERROR", "This tool intentionally returns an error for testing"
        )


class ToolWithLogging(Engine):
    id = "test_tool_with_logging"
    name = "Tool with logging"
    description = "Send three log lines while working."
    input_schema = NO_ARGS

    async def execute(self, context: EngineContext) -> RichResult:
        for line in (
            "Tool execution started",
            "Tool processing data",
            "Tool completed",
        ):
            context.log("info", line)
            await asyncio.sleep(0.05)
        return RichResult((Text("Tool with logging executed successfully"),))


class ToolWithProgress(Engine):
    id = "test_tool_with_progress"
    name = "Tool with progress"
    description = "Report progress three times while working."
    input_schema = NO_ARGS

    async def execute(self, context: EngineContext) -> RichResult:
        for step in (0, 50, 100):
            context.report_progress(step, 100, f"Completed step {step} of 100")
            await asyncio.sleep(0.05)
        return RichResult((Text("Tool with progress executed successfully"),))


class JsonSchema202012(Engine):
    id = "json_schema_2020_12_tool"
    name = "JSON Schema 2020-12"
    description = "Accept input described with JSON Schema 2020-12 keywords."
    input_schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"},
                },
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
        },
        "additionalProperties": False,
    }

    def execute(self, context: EngineContext) -> dict[str, Any]:
        return {"received": dict(context.request.input)}


ENGINES = (
    SimpleText,
    ImageContent,
    AudioContent,
    EmbeddedResource,
    MultipleContentTypes,
    ErrorHandling,
    ToolWithLogging,
    ToolWithProgress,
    JsonSchema202012,
)
