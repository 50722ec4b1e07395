"""The load: scenarios, their JSON-RPC requests, and wrk to send them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchmarks import toolset

LUA = Path(__file__).resolve().parent / "rpc.lua"
PROTOCOL_VERSION = "2025-11-25"


@dataclass(frozen=True)
class Scenario:
    name: str
    method: str
    slug: str
    connections: int
    tool: str = toolset.ECHO_NAME

    def body(self) -> bytes:
        params: dict[str, object] = {}
        if self.method == "tools/call":
            params = {"name": self.tool, "arguments": {"text": "hello"}}
        message = {"jsonrpc": "2.0", "id": 1, "method": self.method, "params": params}
        return json.dumps(message, separators=(",", ":")).encode()

    def expect(self) -> str:
        """A string in every good answer (the echoed text, the last tool)."""
        if self.method == "tools/call":
            return "hello"
        return toolset.tool_names(self.slug)[-1]


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("call-c1", "tools/call", "bench", 1),
        Scenario("call-c16", "tools/call", "bench", 16),
        # The same echo as a generated engine that keeps the default
        # ``blocking = True``: on the gateway it runs in the engine pool.
        Scenario(
            "call-pool-c16", "tools/call", "list10", 16, toolset.generated_name(0)
        ),
        Scenario("list10", "tools/list", "list10", 16),
        Scenario("list200", "tools/list", "list200", 16),
    )
}


def headers(token: str | None) -> dict[str, str]:
    values = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
    }
    if token:
        values["Authorization"] = f"Bearer {token}"
    return values


@dataclass(frozen=True)
class Result:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int
    sample: str

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def ensure_wrk() -> str:
    """Return wrk's path, installing Debian's package if it is missing.

    Raises:
        RuntimeError: wrk is missing and cannot be installed.
    """
    found = shutil.which("wrk")
    if found:
        return found
    print("[setup] installing wrk with apt-get", flush=True)
    for step in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "wrk"],
    ):
        subprocess.run(step, check=False, capture_output=True)  # noqa: S603
    found = shutil.which("wrk")
    if not found:
        raise RuntimeError("wrk is not installed and apt-get could not install it")
    return found


def run_wrk(
    wrk: str, url: str, scenario: Scenario, token: str | None, seconds: float
) -> Result:
    """Load ``url`` for ``seconds`` with one wrk thread; parse its summary."""
    env = {
        **os.environ,
        "BENCH_BODY": scenario.body().decode(),
        "BENCH_HEADERS": "\n".join(f"{k}: {v}" for k, v in headers(token).items()),
        "BENCH_EXPECT": scenario.expect(),
    }
    command = [
        wrk,
        "--threads",
        "1",
        "--connections",
        str(scenario.connections),
        "--duration",
        f"{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "--script",
        str(LUA),
        url,
    ]
    done = subprocess.run(  # noqa: S603 - our own fixed command
        command, capture_output=True, text=True, env=env, check=False
    )
    for line in done.stdout.splitlines():
        if line.startswith("BENCH "):
            return _parse(json.loads(line[len("BENCH ") :]))
    raise RuntimeError(f"wrk failed: {done.stderr.strip() or done.stdout[-300:]}")


def _parse(data: dict[str, object]) -> Result:
    def number(key: str) -> float:
        value = data[key]
        return float(value) if isinstance(value, int | float) else 0.0

    return Result(
        requests=int(number("requests")),
        seconds=number("duration_us") / 1e6,
        p50_ms=number("p50_us") / 1000,
        p99_ms=number("p99_us") / 1000,
        errors=int(number("bad") + number("socket_errors")),
        sample=str(data.get("sample") or ""),
    )
