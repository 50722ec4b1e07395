"""Start the project under gunicorn or uvicorn against the test database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Server:
    kind: str
    host: str
    port: int
    probe_file: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def engine_runs(self) -> list[str]:
        if not self.probe_file.exists():
            return []
        return self.probe_file.read_text(encoding="utf-8").splitlines()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url(settings_dict: dict[str, object]) -> str:
    """The URL of the test database pytest-django created."""
    name = settings_dict["NAME"]
    if "sqlite" in str(settings_dict["ENGINE"]):
        return f"sqlite:///{name}"
    user = settings_dict.get("USER") or "postgres"
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}@{host}:{port}/{name}"


def command(kind: str, port: int, threads: int = 4) -> list[str]:
    if kind == "gunicorn":
        return [
            str(BIN / "gunicorn"),
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            str(threads),
        ]
    return [
        str(BIN / "uvicorn"),
        "config.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        # The reference deployment's parser: it refuses CL+TE and obs-fold.
        "--http",
        "httptools",
    ]


@contextmanager
def running(
    kind: str,
    db_url: str,
    tmp: Path,
    *,
    port: int | None = None,
    **env: str,
) -> Iterator[Server]:
    """Run one server until the block ends; wait until it accepts.

    ``env["MCPGW_GUNICORN_THREADS"]`` (default 4) is gunicorn's thread count:
    each accepted connection holds a thread until its request is read, and
    a browser opens idle connections ahead of need.
    """
    threads = int(env.get("MCPGW_GUNICORN_THREADS", "4"))
    port = port or free_port()
    server = Server(kind, "127.0.0.1", port, tmp / f"{kind}-probe.log")
    environ = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": db_url,
        "MCPGW_PROBE_FILE": str(server.probe_file),
        **env,
    }
    log = (tmp / f"{kind}.log").open("wb")
    process = subprocess.Popen(
        command(kind, port, threads), cwd=ROOT, env=environ, stdout=log, stderr=log
    )
    try:
        wait_for_port(port, process)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return _warm_up(port)
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def _warm_up(port: int) -> None:
    """Send one request, so a test's first request pays no cold imports."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(b"GET /t/warm-up/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sock.sendall(b"Connection: close\r\n\r\n")
        while sock.recv(65536):
            pass
