"""A live server whose PostgreSQL database goes away mid-life, then returns.

The server runs against a database of its own, created and migrated for
this module; the test makes it unreachable from its maintenance connection
(``ALLOW_CONNECTIONS false`` and terminating every backend), then restores it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.live import rawhttp
from tests.live.servers import ROOT, Server, running

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL (DATABASE_URL)"
)


class Database:
    """A throwaway database beside the test database, on the same server."""

    def __init__(self, settings_dict: dict[str, Any]) -> None:
        self.user = settings_dict.get("USER") or "postgres"
        self.host = settings_dict.get("HOST") or "127.0.0.1"
        self.port = int(settings_dict.get("PORT") or 5432)
        self.name = f"mcpgw_fault_{uuid.uuid4().hex[:12]}"

    @property
    def url(self) -> str:
        return f"postgres://{self.user}@{self.host}:{self.port}/{self.name}"

    def maintenance(self, sql: str, params: tuple[str, ...] = ()) -> None:
        with psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute(sql, params)

    def go_away(self) -> None:
        self.maintenance(f"ALTER DATABASE {self.name} WITH ALLOW_CONNECTIONS false")
        self.maintenance(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (self.name,),
        )

    def come_back(self) -> None:
        self.maintenance(f"ALTER DATABASE {self.name} WITH ALLOW_CONNECTIONS true")

    def manage(self, *args: str) -> str:
        env = {
            **os.environ,
            "DATABASE_URL": self.url,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
        }
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.stdout.strip()


@pytest.fixture(scope="module")
def database() -> Iterator[Database]:
    database = Database(connection.settings_dict)
    database.maintenance(f"CREATE DATABASE {database.name}")
    try:
        database.manage("migrate", "--verbosity", "0")
        yield database
    finally:
        database.come_back()
        database.maintenance(f"DROP DATABASE IF EXISTS {database.name} WITH (FORCE)")


@pytest.fixture(scope="module")
def secret(database: Database) -> str:
    database.manage("mcp_tenant", "create", "acme")
    database.manage("mcp_expose", "acme", "test.probe")
    return database.manage(
        "mcp_token", "create", "acme", "--user", "alice", "--create-user"
    )


@pytest.fixture(scope="module")
def server(database: Database, secret: str, tmp_path_factory: Any) -> Iterator[Server]:
    tmp: Path = tmp_path_factory.mktemp("fault")
    with running("gunicorn", database.url, tmp) as live:
        yield live


def call_probe(server: Server, secret: str) -> rawhttp.RawResponse:
    body = {
        "jsonrpc": "2.0",
        "id": 41,
        "method": "tools/call",
        "params": {"name": "test_probe", "arguments": {}},
    }
    data = rawhttp.request(
        "POST",
        "/t/acme/mcp",
        host=f"127.0.0.1:{server.port}",
        body=json.dumps(body).encode(),
        headers=[
            ("Authorization", f"Bearer {secret}"),
            ("Content-Type", "application/json"),
        ],
    )
    return rawhttp.send(server.host, server.port, data)


def test_an_unreachable_database_is_a_503_and_the_next_request_works(
    server, secret, database
):
    assert call_probe(server, secret).status == 200  # the worker holds a connection
    server.probe_file.unlink(missing_ok=True)

    database.go_away()
    try:
        down = call_probe(server, secret)
    finally:
        database.come_back()
    back = call_probe(server, secret)

    assert down.status == 503, down.body[:300]
    assert down.json()["error"]["code"] == -32000
    assert b"Traceback" not in down.body
    for word in (b"SELECT", b"FROM", b"psycopg", b"connection", database.name.encode()):
        assert word not in down.body
    assert back.status == 200, back.body[:300]
    assert back.json()["result"]["isError"] is False
    assert server.engine_runs() == ["acme"]


# -- Under ASGI, on the streaming (SSE) path ------------------------------------


@pytest.fixture(scope="module")
def asgi_server(
    database: Database, secret: str, tmp_path_factory: Any
) -> Iterator[Server]:
    database.manage("mcp_expose", "acme", "test.quiet")
    database.manage("mcp_expose", "acme", "test.sync_ticker")
    tmp: Path = tmp_path_factory.mktemp("fault-asgi")
    with running("uvicorn", database.url, tmp) as live:
        yield live


def stream_call(
    server: Server, secret: str, name: str, arguments: dict[str, Any]
) -> rawhttp.RawResponse:
    params = {"name": name, "arguments": arguments, "_meta": {"progressToken": 1}}
    body = {"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": params}
    data = rawhttp.request(
        "POST",
        "/t/acme/mcp",
        host=f"127.0.0.1:{server.port}",
        body=json.dumps(body).encode(),
        headers=[
            ("Authorization", f"Bearer {secret}"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
    )
    return rawhttp.send(server.host, server.port, data, timeout=30)


def lose_the_database_during(database: Database, call: Any) -> rawhttp.RawResponse:
    """Run ``call`` in a thread; take the database away while the engine runs
    (after admission, before the audit row)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(call)
        time.sleep(1.0)  # admitted; the engine runs for 2.5 s
        database.go_away()
        try:
            response: rawhttp.RawResponse = answer.result(timeout=30)
            return response
        finally:
            database.come_back()


def served_again(server: Server, secret: str) -> None:
    """Wait until ``server`` answers a call: after an outage psycopg's pool
    (the ASGI default) reconnects with back-off, and a request waits for it."""
    deadline = time.monotonic() + 30
    while call_probe(server, secret).status != 200:
        assert time.monotonic() < deadline, "not served within 30 s"
        time.sleep(0.2)


def test_under_asgi_a_lost_database_is_a_json_503_on_a_streamable_call(
    asgi_server, secret, database
):
    served_again(asgi_server, secret)
    response = lose_the_database_during(
        database,
        lambda: stream_call(asgi_server, secret, "test_quiet", {"seconds": 2.5}),
    )

    assert response.status == 503, response.body[:300]
    assert response.header("Content-Type") == "application/json"
    assert response.json()["error"]["code"] == -32000
    assert response.json()["id"] == 42
    assert b"Traceback" not in response.body


def test_under_asgi_a_lost_database_ends_a_stream_with_a_json_rpc_error(
    asgi_server, secret, database
):
    served_again(asgi_server, secret)
    response = lose_the_database_during(
        database,
        lambda: stream_call(asgi_server, secret, "test_sync_ticker", {"steps": 25}),
    )

    assert response.status == 200
    assert (response.header("Content-Type") or "").startswith("text/event-stream")
    last = response.body.strip().split(b"\n\n")[-1]
    message = json.loads(last.split(b"data: ", 1)[1])
    assert message["error"]["code"] == -32000
    assert message["id"] == 42
    assert b"Traceback" not in response.body
    assert stream_call(asgi_server, secret, "test_quiet", {"seconds": 0}).status == 200
