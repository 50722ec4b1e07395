"""The official SDK's own stateless Streamable HTTP server, JSON responses.

Run under uvicorn from the SDK's virtualenv: ``benchmarks.peers.sdk_app:app``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from benchmarks import toolset


def echo(text: str) -> dict[str, Any]:
    return {"text": text}


def _app(slug: str) -> Starlette:
    server: MCPServer[Any] = MCPServer("bench", version="1.0.0")
    for name in toolset.tool_names(slug):
        info = toolset.definition(name)
        server.add_tool(
            echo, name=name, title=info["title"], description=info["description"]
        )
    return server.streamable_http_app(
        streamable_http_path=f"/t/{slug}/mcp", stateless_http=True, json_response=True
    )


_apps = [_app(slug) for slug in toolset.MOUNTS]
_routes: list[BaseRoute] = [route for each in _apps for route in each.routes]


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    async with contextlib.AsyncExitStack() as stack:
        for each in _apps:
            await stack.enter_async_context(each.router.lifespan_context(each))
        yield


app = Starlette(routes=_routes, lifespan=_lifespan)
