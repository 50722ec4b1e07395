"""A bus made before a fork is never shared with the child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from django.db import connection

from mcp_gateway import bus
from mcp_gateway.bus import process
from tests.live.servers import database_url
from tests.mcp_gateway.bus.helpers import REDIS_URL, need_redis
from tests.mcp_gateway.bus.peer import ROOT, WAIT_SECONDS


def fork_report(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.mcp_gateway.bus.forker"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "PYTHONPATH": str(ROOT),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS * 6,
        check=True,
    )
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def check(report: dict[str, Any]) -> None:
    parent, child = report["parent"], report["child"]
    assert child["id"] != parent["id"]
    assert child["pid"] != parent["pid"]
    assert child["heard"] == [{"to": "child"}]
    assert parent["heard"] == [{"to": "parent"}]  # its connection survived


@pytest.mark.django_db(transaction=True)
def test_a_forked_child_listens_on_a_connection_of_its_own_on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("runs on PostgreSQL (DATABASE_URL=postgres://…)")

    report = fork_report({"DATABASE_URL": database_url(connection.settings_dict)})

    check(report)
    pids = sorted([report["parent"]["pid"], report["child"]["pid"]])
    assert report["child"]["connections"] == [f"mcpgw-bus {pid}" for pid in pids]


def test_a_forked_child_listens_on_a_connection_of_its_own_on_redis(tmp_path):
    need_redis()

    report = fork_report(
        {
            "DATABASE_URL": f"sqlite:///{tmp_path / 'fork.sqlite3'}",
            "CACHE_URL": REDIS_URL,
            "MCP_BUS": "redis",
        }
    )

    check(report)
    names = report["child"]["connections"]
    for pid in (report["parent"]["pid"], report["child"]["pid"]):
        assert names.count(f"mcpgw-bus-{pid}") == 1


def test_a_forked_child_gets_its_own_in_process_bus(tmp_path):
    report = fork_report(
        {"DATABASE_URL": f"sqlite:///{tmp_path / 'fork.sqlite3'}", "MCP_BUS": "local"}
    )

    check(report)


def test_a_bus_of_another_process_is_never_used(settings, fresh_bus):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}
    inherited = process.current()
    inherited.pid = -1  # as if made by the parent before a fork

    mine = process.current()

    assert mine is not inherited
    assert mine.process_id != inherited.process_id
    assert process.peek() is mine
    assert bus.process_id() == mine.process_id
