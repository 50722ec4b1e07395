"""Engines installed only by the test settings."""

from __future__ import annotations

import os
from typing import Any

from engines_app.context import EngineContext
from engines_app.engine import Engine
from engines_app.errors import EngineError
from engines_app.interaction import UrlRequest


class ColonEcho(Engine):
    """Derives the same tool name as ``demo.echo``: ``demo_echo``."""

    id = "demo:echo"
    name = "Colon echo"
    description = "An engine whose tool name collides with demo.echo."

    def execute(self, context: EngineContext) -> Any:
        return {"text": "colon"}


COLLIDING = (ColonEcho,)


class Probe(Engine):
    """Appends a line to the file ``MCPGW_PROBE_FILE`` names, when set.

    Live-server tests read that file to prove that no engine ran.
    """

    id = "test.probe"
    name = "Probe"
    description = "Record that an engine ran."

    def execute(self, context: EngineContext) -> Any:
        path = os.environ.get("MCPGW_PROBE_FILE")
        if path:
            with open(path, "a", encoding="utf-8") as probe:
                probe.write(f"{context.principal.tenant}\n")
        return {"ran": True}


class Consent(Engine):
    """Sends the user to a consent page, then says what they chose."""

    id = "test.consent"
    name = "Consent"
    description = "Ask the user to open a consent page."
    input_schema = {"type": "object", "properties": {}, "additionalProperties": False}

    def execute(self, context: EngineContext) -> dict[str, Any] | UrlRequest:
        if context.reply is None:
            return UrlRequest("Grant access", "https://example.com/consent")
        return {"action": context.reply.action, "state": context.reply.state}


PROBES = (Probe, Consent)


class Drifting:
    """An engine whose description comes from the setting
    ``MCPGW_DRIFTING_DESCRIPTION``: changing it changes the tool's definition,
    as a deploy of new engine code would."""

    id = "test.drifting"
    name = "Drifting"
    version = "1.0.0"
    input_schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "additionalProperties": False,
    }

    @property
    def description(self) -> str:
        from django.conf import settings

        return str(getattr(settings, "MCPGW_DRIFTING_DESCRIPTION", "Count words."))

    def execute(self, context: EngineContext) -> Any:
        return {"words": len(str(context.request.input.get("text", "")).split())}


DRIFTING = (Drifting,)


class Downstream(Engine):
    """Calls a pretend downstream API with the tenant's key.

    ``mode``: ``ok`` (the default) answers what it got without the values;
    ``echo`` returns the key (the gateway scrubs it); ``raise`` and
    ``engine_error`` fail with the key in the exception's text.
    """

    id = "test.downstream"
    name = "Downstream"
    description = "Use the tenant's own credentials for a downstream API."
    secrets = ("API_KEY", "REGION")
    input_schema = {
        "type": "object",
        "properties": {"mode": {"type": "string"}},
        "additionalProperties": False,
    }

    def execute(self, context: EngineContext) -> Any:
        key = context.secrets["API_KEY"]
        mode = context.request.input.get("mode", "ok")
        if mode == "echo":
            return {"key": key, "region": context.secrets["REGION"]}
        if mode == "raise":
            raise RuntimeError(f"downstream refused the key {key}")
        if mode == "engine_error":
            raise EngineError("DOWNSTREAM", f"downstream refused the key {key}")
        return {"key_length": len(key), "names": sorted(context.secrets)}


SECRETS = (Downstream,)
