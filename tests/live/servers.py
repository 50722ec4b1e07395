"""Start the project under gunicorn or uvicorn against the test database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
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


def command(
    kind: str, port: int, threads: int = 4, host: str = "127.0.0.1"
) -> list[str]:
    if kind == "gunicorn":
        return [
            str(BIN / "gunicorn"),
            "config.wsgi:application",
            "--bind",
            f"{host}:{port}",
            "--workers",
            "1",
            "--threads",
            str(threads),
        ]
    return [
        str(BIN / "uvicorn"),
        "config.asgi:application",
        "--host",
        host,
        "--port",
        str(port),
        "--log-level",
        "warning",
        # The reference deployment's parser: it refuses CL+TE and obs-fold.
        "--http",
        "httptools",
    ]


@dataclass(frozen=True)
class Placement:
    """Where a server runs: its address, the program it runs through
    (``ip netns exec NS``), and its process count (workers)."""

    host: str = "127.0.0.1"
    prefix: tuple[str, ...] = ()
    workers: int = 1


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
    with running_at(Placement(), kind, db_url, tmp, env, port=port) as server:
        yield server


@contextmanager
def running_at(
    placement: Placement,
    kind: str,
    db_url: str,
    tmp: Path,
    env: Mapping[str, str],
    *,
    port: int | None = None,
) -> Iterator[Server]:
    """``running``, placed: on another address, through another program."""
    threads = int(env.get("MCPGW_GUNICORN_THREADS", "4"))
    port = port or free_port()
    host = placement.host
    server = Server(kind, host, port, tmp / f"{kind}-probe.log")
    environ = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": db_url,
        "MCPGW_PROBE_FILE": str(server.probe_file),
        **env,
    }
    log = (tmp / f"{kind}.log").open("wb")
    argv = [*placement.prefix, *command(kind, port, threads, host)]
    if placement.workers > 1:
        if kind == "uvicorn":
            argv += ["--workers", str(placement.workers)]
        else:
            argv[argv.index("--workers") + 1] = str(placement.workers)
    process = subprocess.Popen(argv, cwd=ROOT, env=environ, stdout=log, stderr=log)
    try:
        wait_for_port(port, process, host)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def wait_for_port(
    port: int, process: subprocess.Popen[bytes], host: str = "127.0.0.1"
) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            # Closed before the warm-up: a sync worker (one thread) would
            # otherwise wait on this connection while the warm-up waits on it.
            socket.create_connection((host, port), timeout=0.2).close()
        except OSError:
            time.sleep(0.1)
            continue
        return _warm_up(host, port)
    raise RuntimeError("server did not start")


def _warm_up(host: str, port: int) -> None:
    """Send one request, so a test's first request pays no cold imports."""
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall(b"GET /t/warm-up/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sock.sendall(b"Connection: close\r\n\r\n")
        while sock.recv(65536):
            pass
