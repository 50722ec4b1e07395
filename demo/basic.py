"""Small engines that show the contract: echo, add, whoami, failures, slow."""

from __future__ import annotations

from typing import Any

from engines_app.context import EngineContext
from engines_app.engine import Engine, Hints
from engines_app.errors import EngineError


class Echo(Engine):
    id = "demo.echo"
    name = "Echo"
    description = "Return the text it is given."
    input_schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    hints = Hints(read_only=True, idempotent=True, destructive=False, open_world=False)

    blocking = False  # pure computation on the input: no pool hop

    def execute(self, context: EngineContext) -> dict[str, Any]:
        return {"text": context.request.input["text"]}


class Add(Engine):
    id = "demo.add"
    name = "Add"
    description = "Add two numbers."
    input_schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    output_schema = {
        "type": "object",
        "properties": {"sum": {"type": "number"}},
        "required": ["sum"],
    }
    hints = Hints(read_only=True, idempotent=True, destructive=False, open_world=False)

    blocking = False  # pure computation on the input: no pool hop

    def execute(self, context: EngineContext) -> dict[str, Any]:
        return {"sum": context.request.input["a"] + context.request.input["b"]}


class WhoAmI(Engine):
    id = "demo.whoami"
    name = "Who am I"
    description = "Tell which tenant, user and scopes this call runs as."
    hints = Hints(read_only=True, idempotent=True)

    blocking = False  # pure computation on the input: no pool hop

    def execute(self, context: EngineContext) -> dict[str, Any]:
        principal = context.principal
        return {
            "tenant": principal.tenant,
            "user": principal.user,
            "scopes": sorted(principal.scopes),
        }


class Fail(Engine):
    id = "demo.fail"
    name = "Fail"
    description = "Fail with an internal error whose text must never reach a client."

    def execute(self, context: EngineContext) -> Any:
        raise RuntimeError("SECRET: internal detail that stays on the server")


class Reject(Engine):
    id = "demo.reject"
    name = "Reject"
    description = "Refuse the call with a public error message."

    def execute(self, context: EngineContext) -> Any:
        raise EngineError("REJECTED", "This request was rejected by the engine.")


class Slow(Engine):
    id = "demo.slow"
    name = "Slow"
    description = "Wait a number of seconds, reporting progress each second."
    input_schema = {
        "type": "object",
        "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 30}},
        "required": ["seconds"],
        "additionalProperties": False,
    }
    hints = Hints(read_only=True, idempotent=True)

    def execute(self, context: EngineContext) -> dict[str, Any]:
        seconds = float(context.request.input["seconds"])
        waited = 0.0
        while waited < seconds:
            step = min(1.0, seconds - waited)
            if context.signal.wait(step):
                raise EngineError("CANCELLED", "The call was cancelled.")
            waited += step
            context.report_progress(waited, seconds, None)
        return {"waited": seconds}


ENGINES = (Echo, Add, WhoAmI, Fail, Reject, Slow)
