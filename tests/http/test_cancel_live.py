"""A 2025 client's ``notifications/cancelled`` stops the call on another worker.

Two servers share one Redis (cache and bus), as two workers of a
deployment do: the call runs on one, the cancel is POSTed to the other, so
it always lands on a worker other than the call's. The test reads the
running-call keys in Redis to know when the call is cancellable, and the
audit log for the outcome.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.db import connection

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import Tenant
from tests.live import rawhttp
from tests.live.servers import Server, database_url, running
from tests.services import redis_running

REDIS_DB = 13
RUNNING = ":1:mcpgw:running:*"  # Django's key prefix and version
VERSION = "2025-11-25"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_running(), reason="needs Redis on 6379"),
]

CACHE_URL = f"redis://127.0.0.1:6379/{REDIS_DB}"


@pytest.fixture
def keys() -> Iterator[redis.Redis]:
    client = redis.Redis(db=REDIS_DB)
    yield client
    for key in client.scan_iter(RUNNING):
        client.delete(key)
    client.close()


@pytest.fixture
def secrets() -> dict[str, str]:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.slow"])
    return {
        name: tokens.issue(tenant, User.objects.create_user(name)).secret
        for name in ("alice", "bob")
    }


def post(server: Server, secret: str, message: dict[str, Any]) -> rawhttp.RawResponse:
    headers = [
        ("Authorization", f"Bearer {secret}"),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", VERSION),
    ]
    data = rawhttp.request(
        "POST",
        "/t/acme/mcp",
        host=f"127.0.0.1:{server.port}",
        body=json.dumps(message).encode(),
        headers=headers,
    )
    return rawhttp.send(server.host, server.port, data, timeout=60)


def cancel(server: Server, secret: str, request_id: Any) -> int:
    notification = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": "user"},
    }
    return post(server, secret, notification).status


def folder(tmp: Path, name: str) -> Path:
    (tmp / name).mkdir()
    return tmp / name


def eventually(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("never happened")


@pytest.mark.parametrize(
    ("runs", "hears"), [("uvicorn", "gunicorn"), ("gunicorn", "uvicorn")]
)
def test_a_cancel_posted_to_another_worker_stops_the_engine(
    runs, hears, secrets, keys, tmp_path
):
    url = database_url(connection.settings_dict)
    with (
        running(
            runs, url, folder(tmp_path, "a"), CACHE_URL=CACHE_URL, MCP_BUS="redis"
        ) as first,
        running(
            hears, url, folder(tmp_path, "b"), CACHE_URL=CACHE_URL, MCP_BUS="redis"
        ) as second,
    ):
        answers: list[rawhttp.RawResponse] = []
        call = {
            "jsonrpc": "2.0",
            "id": "call-7",
            "method": "tools/call",
            "params": {"name": "demo_slow", "arguments": {"seconds": 30}},
        }
        caller = threading.Thread(
            target=lambda: answers.append(post(first, secrets["alice"], call))
        )
        caller.start()
        eventually(lambda: len(list(keys.scan_iter(RUNNING))) == 1)

        # Another principal naming the same id, and an unknown id: no effect.
        assert cancel(second, secrets["bob"], "call-7") == 202
        assert cancel(second, secrets["alice"], "call-8") == 202
        caller.join(0.5)
        assert caller.is_alive()

        assert cancel(second, secrets["alice"], "call-7") == 202
        caller.join(3)  # demo_slow polls its signal: it stops at once

        assert not caller.is_alive()
        assert answers[0].status == 200
        assert "CANCELLED" in answers[0].body.decode()
        assert list(ToolCall.objects.values_list("request_id", "outcome")) == [
            ("call-7", "cancelled")
        ]
        assert list(keys.scan_iter(RUNNING)) == []


def test_a_request_id_two_running_calls_share_is_never_cancelled(
    secrets, keys, tmp_path
):
    url = database_url(connection.settings_dict)
    with (
        running(
            "uvicorn", url, folder(tmp_path, "a"), CACHE_URL=CACHE_URL, MCP_BUS="redis"
        ) as first,
        running(
            "gunicorn", url, folder(tmp_path, "b"), CACHE_URL=CACHE_URL, MCP_BUS="redis"
        ) as second,
    ):
        answers: list[rawhttp.RawResponse] = []
        call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "demo_slow", "arguments": {"seconds": 2}},
        }
        callers = [
            threading.Thread(
                target=lambda server=server: answers.append(
                    post(server, secrets["alice"], call)
                )
            )
            for server in (first, second)
        ]
        callers[0].start()
        eventually(lambda: len(list(keys.scan_iter(RUNNING))) == 1)
        callers[1].start()
        key = next(keys.scan_iter(RUNNING))
        eventually(lambda: b"ambiguous" in (keys.get(key) or b""))

        assert cancel(first, secrets["alice"], 3) == 202
        for caller in callers:
            caller.join(10)

        outcomes = sorted(ToolCall.objects.values_list("outcome", flat=True))
        assert outcomes == ["ok", "ok"]
