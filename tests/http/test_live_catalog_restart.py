"""Live catalog across a restart of PostgreSQL, the database and the bus.

The test runs a PostgreSQL cluster of its own (``initdb``, as the
``postgres`` user: the server refuses root), migrates it, and serves it
with uvicorn; the bus is PostgreSQL's LISTEN/NOTIFY. Restarting the cluster
drops the bus's connection: once it listens again every stream gets a
``list_changed`` (a change may have been missed), and a later change (its
committed NOTIFY, sent to the cluster) reaches them as usual.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from mcp_gateway import bus
from mcp_gateway.bus import events
from tests.http.listening import LIST_CHANGED, Stream, prime
from tests.live.servers import ROOT, running
from tests.mcp_gateway.bus.test_reconnect import PostgresServer

SETUP = """
from django.contrib.auth.models import User
from django.core.management import call_command
call_command("migrate", verbosity=0)
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import Tenant
tenant = Tenant.objects.create(slug="acme", name="Acme")
bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
print(tenant.pk, tokens.issue(tenant, User.objects.create_user("alice")).secret)
"""


@pytest.fixture
def own_database() -> Iterator[tuple[PostgresServer, str]]:
    """A migrated database on a cluster of this test's own, and its URL."""
    server = PostgresServer()
    try:
        server.start()
        with psycopg.connect(**server.params, autocommit=True) as conn:
            conn.execute("CREATE DATABASE gateway")
        yield server, f"postgres://postgres@127.0.0.1:{server.port}/gateway"
    finally:
        server.remove()


def manage(db_url: str, *args: str) -> str:
    environ = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": db_url,
        "CACHE_URL": "locmemcache://",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environ,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def committed(cluster: PostgresServer, event: bus.CatalogChanged) -> None:
    """What a committed change of the tenant's catalog sends: its NOTIFY."""
    payload = events.encode(events.catalog_payload(event))
    with psycopg.connect(
        **{**cluster.params, "dbname": "gateway"}, autocommit=True
    ) as conn:
        conn.execute("SELECT pg_notify('mcpgw_catalog', %s)", [payload])


def test_listeners_resync_after_postgresql_restarts(own_database, tmp_path: Path):
    cluster, db_url = own_database
    tenant, secret = manage(db_url, "shell", "--command", SETUP).split()[-2:]
    with running(
        "uvicorn",
        db_url,
        tmp_path,
        CACHE_URL="locmemcache://",
        MCP_SSE_KEEPALIVE_SECONDS="1",
    ) as live:
        prime(live, secret)
        with (
            Stream(live, secret, modern=False) as old,
            Stream(live, secret, modern=True) as modern,
        ):
            cluster.stop()
            cluster.start()
            old.wait_for(LIST_CHANGED, timeout=15)  # they may have missed one
            modern.wait_for(LIST_CHANGED, timeout=5)
            committed(cluster, bus.CatalogChanged(int(tenant), version=99))
            old.wait_for(LIST_CHANGED, count=2, timeout=5)
            modern.wait_for(LIST_CHANGED, count=2, timeout=5)
            assert not old.ended.is_set()  # the restart ended no stream
            assert not modern.ended.is_set()
