"""A second OS process on the bus, driven by JSON lines on its stdin.

Run as ``python -m tests.mcp_gateway.bus.peer``: it subscribes to every
topic, prints ``{"ready": <process id>, "pid": <os pid>}`` once listening,
then one line per event received (``{"event": "CatalogChanged", ...,
"at": <monotonic>}``) and one per command answered. Commands:
``{"op": "publish", "tenant": 1, "version": 2, "commit": true}``,
``{"op": "send", "to": <id>, "data": {...}, "commit": true}``,
``{"op": "stats"}``, ``{"op": "quit"}``.

``Peer`` runs one from a test.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
WAIT_SECONDS = 10.0
"""How long a test waits for something that should come (not a speed limit)."""


class _Rollback(Exception):
    pass


def main() -> None:
    import django

    django.setup()
    from django.db import transaction

    from mcp_gateway import bus

    lock = threading.Lock()

    def say(line: dict[str, Any]) -> None:
        with lock:
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()

    def heard(event: Any) -> None:
        fields = dataclasses.asdict(event)
        say({"event": type(event).__name__, **fields, "at": time.monotonic()})

    bus.subscribe(bus.CatalogChanged, heard)
    bus.subscribe(bus.PrincipalChanged, heard)
    bus.subscribe(bus.Message, heard)
    while not bus.stats().listening:
        time.sleep(0.01)
    say({"ready": bus.process_id(), "pid": os.getpid()})
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        if op == "quit":
            break
        if op == "stats":
            say({"stats": dataclasses.asdict(bus.stats())})
            continue
        try:
            with transaction.atomic():
                if op == "publish":
                    event = bus.CatalogChanged(command["tenant"], command["version"])
                    bus.publish(event)
                else:
                    bus.send(command["to"], command["data"])
                committed_at = time.monotonic()
                if not command.get("commit", True):
                    raise _Rollback
        except _Rollback:
            pass
        say({"done": op, "at": committed_at})
    bus.close()


class Peer:
    """One peer process and what it printed."""

    def __init__(self, env: dict[str, str]) -> None:
        environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "PYTHONPATH": str(ROOT),
            **env,
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.mcp_gateway.bus.peer"],
            cwd=ROOT,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        ready = self.expect(lambda line: "ready" in line)
        self.process_id: str = ready["ready"]
        self.pid: int = ready["pid"]

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))

    def tell(self, **command: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def ask(self, **command: Any) -> dict[str, Any]:
        self.tell(**command)
        return self.expect(lambda line: line.get("done") == command["op"])

    def expect(
        self, wanted: Callable[[dict[str, Any]], bool], timeout: float = WAIT_SECONDS
    ) -> dict[str, Any]:
        """The first line printed, so far or within ``timeout``, that fits."""
        for line in self.seen:
            if wanted(line):
                return line
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            self.seen.append(line)
            if wanted(line):
                return line
        raise AssertionError(f"peer {self.pid} never printed it; saw {self.seen}")

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self.seen if line.get("event") == kind]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.tell(op="quit")
            try:
                self.process.wait(timeout=WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(WAIT_SECONDS)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


@contextmanager
def peers(count: int, env: dict[str, str]) -> Iterator[list[Peer]]:
    started: list[Peer] = []
    try:
        for _ in range(count):
            started.append(Peer(env))
        yield started
    finally:
        for peer in started:
            peer.stop()


if __name__ == "__main__":
    main()
