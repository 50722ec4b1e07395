"""The tools every benchmarked server serves, as plain data.

Imports nothing but the standard library, so the gateway's engines module,
the ceiling project and each peer (in its own virtualenv) share one
definition: ``demo_echo`` and 200 trivial generated tools.
"""

from __future__ import annotations

from typing import Any

ECHO_NAME = "demo_echo"
ECHO_TITLE = "Echo"
ECHO_DESCRIPTION = "Return the text it is given."
ECHO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}
GENERATED_COUNT = 200


def generated_id(index: int) -> str:
    """The engine id of generated tool ``index`` (tool name: dots → ``_``)."""
    return f"bench.t{index:03d}"


def generated_name(index: int) -> str:
    return generated_id(index).replace(".", "_")


def generated_description(index: int) -> str:
    return f"Benchmark tool {index}: return the text it is given."


def generated_schema() -> dict[str, Any]:
    return dict(ECHO_SCHEMA)


def tool_names(slug: str) -> list[str]:
    """The tool names a benchmark mount serves: echo, 10 tools, 200 tools."""
    if slug == "list10":
        return [ECHO_NAME, *(generated_name(i) for i in range(9))]
    if slug == "list200":
        return [generated_name(i) for i in range(GENERATED_COUNT)]
    return [ECHO_NAME]


def definition(name: str) -> dict[str, Any]:
    """A tool definition as plain JSON (the wire form of ``tools/list``)."""
    if name == ECHO_NAME:
        title, description = ECHO_TITLE, ECHO_DESCRIPTION
    else:
        title, description = name, generated_description(int(name.rsplit("t", 1)[1]))
    return {
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": dict(ECHO_SCHEMA),
    }


MOUNTS = ("bench", "list10", "list200")
"""Every server serves these at ``/t/<slug>/mcp``."""
