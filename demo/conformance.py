"""Engines named after the tools the official MCP conformance suite calls."""

from __future__ import annotations

import asyncio
from typing import Any

from engines_app.context import EngineContext
from engines_app.engine import Engine
from engines_app.errors import EngineError
from engines_app.interaction import InputReply, InputRequest
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
                "$anchor": "addressDef",
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
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {
            "properties": {"contactMethod": {"const": "phone"}},
            "required": ["contactMethod"],
        },
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    }

    def execute(self, context: EngineContext) -> dict[str, Any]:
        return {"received": dict(context.request.input)}


class InputRequiredElicitation(Engine):
    id = "test_input_required_result_elicitation"
    name = "Input required: elicitation"
    description = "Ask the caller's name, then greet them."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | InputRequest:
        reply = context.reply
        if reply is None or reply.action != "accept":
            name = {"name": {"type": "string"}}
            return InputRequest("What is your name?", name, ("name",), key="user_name")
        return RichResult((Text(f"Hello, {reply.content.get('name')}!"),))


class InputRequiredRequestState(Engine):
    id = "test_input_required_result_request_state"
    name = "Input required: request state"
    description = "Ask for a confirmation and check the state it comes back with."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | InputRequest:
        reply = context.reply
        if reply is None:
            ok = {"ok": {"type": "boolean"}}
            return InputRequest("Please confirm", ok, ("ok",), "round-1", "confirm")
        verdict = "state-ok" if reply.state == "round-1" else "state-unexpected"
        return RichResult((Text(f"{verdict}: ok={reply.content.get('ok')}"),))


class InputRequiredMultiRound(Engine):
    id = "test_input_required_result_multi_round"
    name = "Input required: two rounds"
    description = "Ask a name, then a colour, then answer."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | InputRequest:
        reply = context.reply
        if reply is None:
            name = {"name": {"type": "string"}}
            return InputRequest(
                "Step 1: What is your name?", name, ("name",), "step1", "step1"
            )
        if reply.state == "step1":
            color = {"color": {"type": "string"}}
            who = reply.content.get("name")
            return InputRequest(
                "Step 2: What is your favourite colour?",
                color,
                ("color",),
                f"step2:{who}",
                "step2",
            )
        who = reply.state.removeprefix("step2:")
        text = f"{who} likes {reply.content.get('color')}"
        return RichResult((Text(text),))


class InputRequiredTamperedState(Engine):
    id = "test_input_required_result_tampered_state"
    name = "Input required: tamper-proof state"
    description = "Ask for a confirmation; the sealed state cannot be altered."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | InputRequest:
        if context.reply is None:
            ok = {"ok": {"type": "boolean"}}
            return InputRequest("Please confirm", ok, ("ok",), "sealed", "confirm")
        return RichResult((Text(f"state={context.reply.state}"),))


class LoggingTool(Engine):
    id = "test_logging_tool"
    name = "Logging tool"
    description = "Log a line; no log reaches a caller that set no log level."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult:
        context.log("info", "test_logging_tool ran")
        return RichResult((Text("logged"),))


class StreamingElicitation(Engine):
    id = "test_streaming_elicitation"
    name = "Streaming elicitation"
    description = "Ask a question; the answer stream carries no request of its own."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | InputRequest:
        if context.reply is None:
            answer = {"answer": {"type": "string"}}
            return InputRequest("Anything to add?", answer, ("answer",))
        return RichResult((Text(f"answer={context.reply.content.get('answer')}"),))


class MissingCapability(Engine):
    id = "test_missing_capability"
    name = "Missing capability"
    description = "Needs elicitation; a caller that did not declare it is refused."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | InputRequest:
        if context.reply is None:
            ok = {"ok": {"type": "boolean"}}
            return InputRequest("Please confirm", ok, ("ok",))
        return RichResult((Text("confirmed"),))


class CustomHeader(Engine):
    id = "test_custom_header"
    name = "Custom header"
    description = "Echo a region that also travels in the Mcp-Param-Region header."
    input_schema = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
        "additionalProperties": False,
    }

    def execute(self, context: EngineContext) -> RichResult:
        return RichResult((Text(f"region={context.request.input['region']}"),))


def elicited(reply: InputReply) -> RichResult:
    content = dict(reply.content)
    return RichResult(
        (Text(f"Elicitation completed: action={reply.action}, content={content}"),)
    )


class Elicitation(Engine):
    id = "test_elicitation"
    name = "Elicitation"
    description = "Ask the caller for a user name and an e-mail address."
    input_schema = {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "additionalProperties": False,
    }

    def execute(self, context: EngineContext) -> RichResult | InputRequest:
        if context.reply is None:
            message = context.request.input.get("message", "Your details?")
            fields = {"username": {"type": "string"}, "email": {"type": "string"}}
            return InputRequest(message, fields, ("username", "email"))
        return elicited(context.reply)


class ElicitationDefaults(Engine):
    id = "test_elicitation_sep1034_defaults"
    name = "Elicitation with defaults"
    description = "Ask with a default value for each primitive type."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | InputRequest:
        if context.reply is None:
            status = ["active", "inactive", "pending"]
            fields: dict[str, dict[str, Any]] = {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": status, "default": "active"},
                "verified": {"type": "boolean", "default": True},
            }
            return InputRequest("Your profile, with defaults", fields)
        return elicited(context.reply)


class ElicitationEnums(Engine):
    id = "test_elicitation_sep1330_enums"
    name = "Elicitation with enums"
    description = "Ask with each of the five enum shapes."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | InputRequest:
        if context.reply is None:
            options = ["option1", "option2", "option3"]
            fields: dict[str, dict[str, Any]] = {
                "untitledSingle": {"type": "string", "enum": options},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": options},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            }
            return InputRequest("Pick your options", fields)
        return elicited(context.reply)


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
    InputRequiredElicitation,
    InputRequiredRequestState,
    InputRequiredMultiRound,
    InputRequiredTamperedState,
    LoggingTool,
    StreamingElicitation,
    MissingCapability,
    CustomHeader,
    Elicitation,
    ElicitationDefaults,
    ElicitationEnums,
)
