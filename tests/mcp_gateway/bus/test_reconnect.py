"""The bus survives a restart of its Redis or PostgreSQL server.

Each test runs a server of its own (a ``redis-server``; a PostgreSQL
cluster made with ``initdb`` and run as the ``postgres`` user, since the
server refuses root), stops and starts it under a listening bus, and
expects a ``Resync`` and then normal delivery.
"""

from __future__ import annotations

import glob
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mcp_gateway import bus
from mcp_gateway.bus import backends, core, events
from tests.live.servers import free_port
from tests.mcp_gateway.bus.helpers import (
    Recorder,
    eventually,
    listening_on,
    need,
    need_redis_server,
)
from tests.mcp_gateway.bus.peer import WAIT_SECONDS


def wait_port(port: int, up: bool) -> None:
    eventually(lambda: listening_on("127.0.0.1", port) is up, f"port {port} {up}")


class RedisServer:
    def __init__(self, program: str, directory: Path) -> None:
        self.port = free_port()
        self.command = [
            program,
            *("--port", str(self.port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", str(directory)),
        ]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_port(self.port, up=True)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()  # by the pid this test recorded
            self.process.wait(WAIT_SECONDS)
            self.process = None
        wait_port(self.port, up=False)


@pytest.fixture
def own_redis(tmp_path) -> Iterator[RedisServer]:
    server = RedisServer(need_redis_server(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_the_bus_reconnects_after_redis_restarts(settings, own_redis, recorder):
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": own_redis.url,
        },
    }
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "redis"}
    bus.subscribe(bus.CatalogChanged, recorder)
    wait_resyncs(recorder, 1)
    bus.publish(bus.CatalogChanged(1, 1))
    recorder.wait_for(lambda e: e == bus.CatalogChanged(1, 1))

    own_redis.stop()
    eventually(lambda: not bus.healthy(), "the bus noticed")
    own_redis.start()
    wait_resyncs(recorder, 2)
    bus.publish(bus.CatalogChanged(1, 2))

    recorder.wait_for(lambda e: e == bus.CatalogChanged(1, 2))
    assert recorder.events == [
        bus.Resync(),
        bus.CatalogChanged(1, 1),
        bus.Resync(),
        bus.CatalogChanged(1, 2),
    ]
    assert bus.stats().reconnects == 1
    assert bus.healthy() is True


def wait_resyncs(recorder: Recorder, count: int) -> None:
    eventually(lambda: len(recorder.of(bus.Resync)) == count, f"{count} resyncs")


class PostgresServer:
    """A throwaway cluster in a temporary directory, run as ``postgres``."""

    def __init__(self) -> None:
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        need(bool(bins), "needs PostgreSQL's server programs (pg_ctl, initdb)")
        need(os.geteuid() != 0 or _has_user("postgres"), "needs a postgres user")
        self.bin = Path(bins[-1]).parent
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="mcpgw-bus-pg-"))
        self.root.chmod(0o755)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self.data = self.root / "data"
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")

    @property
    def params(self) -> dict[str, Any]:
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "user": "postgres",
            "dbname": "postgres",
            "connect_timeout": 5,
        }

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
        log = str(self.root / "server.log")
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start"
        )

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if os.geteuid() == 0:  # initdb and the server refuse root
            command = ["su", "postgres", "-c", shlex.join(command)]
        subprocess.run(command, check=True, capture_output=True, timeout=120)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture
def own_postgresql() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.remove()


def notify(server: PostgresServer, channel: str, event: bus.CatalogChanged) -> None:
    payload = events.encode(events.catalog_payload(event))
    with psycopg.connect(**server.params, autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, %s)", [channel, payload])


def test_the_bus_reconnects_after_postgresql_restarts(own_postgresql, fresh_bus):
    recorder = Recorder()
    listener = core.Bus(plan=backends.Plan("postgresql", (own_postgresql.params,)))
    channel = listener.transport.channel("catalog")
    try:
        listener.subscribe(bus.CatalogChanged, recorder)
        wait_resyncs(recorder, 1)
        notify(own_postgresql, channel, bus.CatalogChanged(1, 1))
        recorder.wait_for(lambda e: e == bus.CatalogChanged(1, 1))

        own_postgresql.stop()
        eventually(lambda: not listener.healthy(), "the bus noticed")
        own_postgresql.start()
        wait_resyncs(recorder, 2)
        notify(own_postgresql, channel, bus.CatalogChanged(1, 2))

        recorder.wait_for(lambda e: e == bus.CatalogChanged(1, 2))
        assert recorder.events == [
            bus.Resync(),
            bus.CatalogChanged(1, 1),
            bus.Resync(),
            bus.CatalogChanged(1, 2),
        ]
        assert listener.stats().reconnects == 1
        assert listener.healthy() is True
    finally:
        listener.close()
