"""List and call the site's tool with the official MCP Python SDK client.

``python sdk_probe.py URL TOKEN MODE`` prints JSON: the negotiated protocol
version, the tool names and the call's structured result.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def probe(url: str, token: str, mode: str) -> dict[str, object]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        listed = await client.list_tools()
        called = await client.call_tool(
            "site_summarize", {"text": "alpha beta gamma delta"}
        )
        return {
            "version": client.protocol_version,
            "tools": sorted(tool.name for tool in listed.tools),
            "is_error": bool(called.is_error),
            "structured": called.structured_content,
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(probe(*sys.argv[1:4]))))
