from __future__ import annotations

import os
from typing import Any

import msgspec
from django.http import HttpRequest
from django.urls import path
from django_mcpz.bearer_tokens.auth import token_auth
from django_mcpz.server import MCPServer, public

from benchmarks import toolset


class EchoParams(msgspec.Struct):
    text: str


def echo(request: HttpRequest, params: EchoParams) -> dict[str, Any]:
    return {"text": params.text}


def generated(request: HttpRequest, params: EchoParams) -> dict[str, Any]:
    return {"text": params.text}


# ``BENCH_MCPZ_AUTH=none``: the row without authentication.
_AUTH = public if os.environ.get("BENCH_MCPZ_AUTH") == "none" else token_auth


def _server(slug: str) -> MCPServer:
    server = MCPServer(name="bench", version="1.0.0", auth=_AUTH)
    for name in toolset.tool_names(slug):
        info = toolset.definition(name)
        function = echo if name == toolset.ECHO_NAME else generated
        server.tool(
            name=name,
            title=info["title"],
            description=info["description"],
            input_schema=EchoParams,
        )(function)
    return server


urlpatterns = [
    path(f"t/{slug}/mcp", _server(slug), name=f"mcp-{slug}") for slug in toolset.MOUNTS
]
