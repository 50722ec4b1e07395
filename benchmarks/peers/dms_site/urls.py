from __future__ import annotations

from typing import Any

from django.urls import path
from mcp_server.djangomcp import DjangoMCP
from mcp_server.views import MCPServerStreamableHttpView

from benchmarks import toolset


def echo(text: str) -> dict[str, Any]:
    return {"text": text}


def _view(slug: str) -> Any:
    server = DjangoMCP(name="bench", stateless=True)
    for name in toolset.tool_names(slug):
        info = toolset.definition(name)
        server.add_tool(
            echo, name=name, title=info["title"], description=info["description"]
        )
    return MCPServerStreamableHttpView.as_view(
        mcp_server=server, authentication_classes=[], permission_classes=[]
    )


urlpatterns = [path(f"t/{slug}/mcp", _view(slug)) for slug in toolset.MOUNTS]
