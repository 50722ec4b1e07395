"""One view: parse the JSON-RPC body, answer with a hand-built result."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from benchmarks import toolset

_TOOLS = {
    slug: [toolset.definition(name) for name in toolset.tool_names(slug)]
    for slug in toolset.MOUNTS
}


@csrf_exempt
def endpoint(request: HttpRequest, slug: str) -> HttpResponse:
    return answer(json.loads(request.body), slug)


def answer(message: dict[str, Any], slug: str) -> HttpResponse:
    """The JSON-RPC answer to a parsed request."""
    method = message.get("method")
    if method == "tools/call":
        result = _call(message["params"])
    elif method == "tools/list":
        result = {"tools": _TOOLS.get(slug, _TOOLS["bench"])}
    else:
        return JsonResponse(
            {"jsonrpc": "2.0", "id": message.get("id"), "error": _not_found(method)}
        )
    return JsonResponse({"jsonrpc": "2.0", "id": message.get("id"), "result": result})


def _call(params: dict[str, Any]) -> dict[str, Any]:
    value = {"text": params["arguments"]["text"]}
    text = json.dumps(value, separators=(",", ":"))
    return {"content": [{"type": "text", "text": text}], "structuredContent": value}


def _not_found(method: object) -> dict[str, Any]:
    return {"code": -32601, "message": f"Method not found: {method}"}
