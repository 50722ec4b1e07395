"""Engines named after the tools the official MCP conformance suite calls."""

from __future__ import annotations

import asyncio
from typing import Any

from engines_app.context import EngineContext
from engines_app.engine import Engine
from engines_app.errors import EngineError
from engines_app.interaction import (
    FORM,
    MODEL,
    Asked,
    InputReply,
    InputRequest,
    InputRound,
    Message,
    ModelReply,
    ModelRequest,
    Question,
    RootsReply,
    RootsRequest,
)
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
    description = (
        "Needs the caller's model; a caller that did not declare it is refused."
    )
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | ModelRequest:
        answer = context.answers.get("model")
        if not isinstance(answer, ModelReply):
            return ModelRequest((Message("user", "Say hello."),), max_tokens=20)
        return RichResult((Text(f"model said: {answer.text}"),))


class InputRequiredSampling(Engine):
    id = "test_input_required_result_sampling"
    name = "Input required: sampling"
    description = "Ask the caller's model a question, then pass on its answer."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | ModelRequest:
        answer = context.answers.get("capital_question")
        if not isinstance(answer, ModelReply):
            question = Message("user", "What is the capital of France?")
            return ModelRequest((question,), max_tokens=100, key="capital_question")
        return RichResult((Text(f"The model ({answer.model}) said: {answer.text}"),))


class InputRequiredListRoots(Engine):
    id = "test_input_required_result_list_roots"
    name = "Input required: roots"
    description = "Ask the caller's roots, then list them."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | RootsRequest:
        answer = context.answers.get("client_roots")
        if not isinstance(answer, RootsReply):
            return RootsRequest(key="client_roots")
        return RichResult((Text(f"Roots: {_roots(answer)}"),))


class InputRequiredMultipleInputs(Engine):
    id = "test_input_required_result_multiple_inputs"
    name = "Input required: several at once"
    description = "Ask a name, the model's greeting and the roots in one round."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | InputRound:
        answers = context.answers
        name, greeting, roots = (
            answers.get(key) for key in ("user_name", "greeting", "client_roots")
        )
        if not (
            isinstance(name, InputReply)
            and isinstance(greeting, ModelReply)
            and isinstance(roots, RootsReply)
        ):
            schema = {"name": {"type": "string"}}
            prompt = Message("user", "Generate a greeting")
            return InputRound(
                (
                    InputRequest(
                        "What is your name?", schema, ("name",), key="user_name"
                    ),
                    ModelRequest((prompt,), max_tokens=50, key="greeting"),
                    RootsRequest(key="client_roots"),
                ),
                state="multiple",
            )
        who = name.content.get("name")
        text = f"{greeting.text} {who} (roots: {_roots(roots)}; state={name.state})"
        return RichResult((Text(text),))


class InputRequiredCapabilities(Engine):
    id = "test_input_required_result_capabilities"
    name = "Input required: what the caller can answer"
    description = "Ask only what the caller declared it can answer."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult | Asked:
        if context.answers:
            return RichResult((Text(f"answered: {sorted(context.answers)}"),))
        questions: list[Question] = []
        if MODEL in context.answerable:
            prompt = Message("user", "Name a colour.")
            questions.append(ModelRequest((prompt,), max_tokens=10, key="colour"))
        if FORM in context.answerable:
            schema = {"name": {"type": "string"}}
            questions.append(InputRequest("Your name?", schema, key="name"))
        if not questions:
            return RichResult((Text("nothing to ask this caller"),))
        return InputRound(questions)


class Sampling(Engine):
    id = "test_sampling"
    name = "Sampling"
    description = "Ask the caller's model to answer a prompt."
    input_schema = {
        "type": "object",
        "properties": {"prompt": {"type": "string"}},
        "required": ["prompt"],
        "additionalProperties": False,
    }

    def execute(self, context: EngineContext) -> RichResult | ModelRequest:
        answer = context.answers.get("model")
        if not isinstance(answer, ModelReply):
            prompt = Message("user", context.request.input["prompt"])
            return ModelRequest((prompt,), max_tokens=100)
        return RichResult((Text(f"LLM response: {answer.text}"),))


class ChangingTool(Engine):
    id = "test_changing_tool"
    name = "Changing tool"
    description = "Come and go from the tool list as test_trigger_tool_change says."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult:
        return RichResult((Text("still here"),))


class TriggerToolChange(Engine):
    """A conformance fixture that changes its own tenant's catalog.

    Each call withdraws ``test_changing_tool`` from the caller's tenant, or
    exposes it again, so a ``subscriptions/listen`` stream sees
    ``tools/list_changed``. Expose it only to a tenant that runs the
    conformance suite: any caller of it changes what the tenant serves.
    """

    id = "test_trigger_tool_change"
    name = "Trigger a tool list change"
    description = "Withdraw or expose test_changing_tool for this tenant."
    input_schema = NO_ARGS

    def execute(self, context: EngineContext) -> RichResult:
        from mcp_gateway import bookkeeping
        from mcp_gateway.models import Tenant

        tenant = Tenant.objects.get(slug=context.principal.tenant)
        if bookkeeping.unexpose(tenant, ChangingTool.id):
            return RichResult((Text("test_changing_tool withdrawn"),))
        bookkeeping.expose(tenant, ChangingTool.id)
        return RichResult((Text("test_changing_tool exposed"),))


def _roots(reply: RootsReply) -> str:
    return ", ".join(root.uri for root in reply.roots) or "none"


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
    InputRequiredSampling,
    InputRequiredListRoots,
    InputRequiredMultipleInputs,
    InputRequiredCapabilities,
    Sampling,
    ChangingTool,
    TriggerToolChange,
    CustomHeader,
    Elicitation,
    ElicitationDefaults,
    ElicitationEnums,
)
