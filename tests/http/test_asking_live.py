"""``demo_delete_note`` asks for confirmation on the 2025 wires, statelessly.

Three servers share one Redis (the cache) and one bus (Redis pub/sub, or
PostgreSQL LISTEN/NOTIFY when the tests run on PostgreSQL), as the workers
of a deployment do: the call runs on the first (uvicorn, or gunicorn), and
every answer is POSTed to another, so it always lands on a worker other
than the waiting one.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import redis
from django.contrib.auth.models import User
from django.db import connection

from demo.models import Note
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import Tenant
from tests.live.calling import StreamedCall
from tests.live.events import events
from tests.live.servers import Server, database_url, running
from tests.services import redis_running

REDIS_DB = 12
ASKED = ":1:mcpgw:asked:*"  # Django's key prefix and version
VERSION = "2025-11-25"
DEADLINE_SECONDS = 8
ACCEPT = {"action": "accept", "content": {"confirm": True}}

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_running(), reason="needs Redis on 6379"),
]


def folder(tmp: Path, name: str) -> Path:
    (tmp / name).mkdir()
    return tmp / name


@pytest.fixture(
    scope="module",
    params=["redis", "postgresql", "redis-gunicorn"],
)
def pair(
    request: pytest.FixtureRequest,
    django_db_setup: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, Server, Server]]:
    """The waiting server, an answering uvicorn one, and a gunicorn one that
    answers too. The waiting one is uvicorn, or gunicorn (``-gunicorn``)."""
    bus_kind, _, waiting = request.param.partition("-")
    if bus_kind == "postgresql" and connection.vendor != "postgresql":
        pytest.skip("the PostgreSQL bus needs the tests on PostgreSQL")
    url = database_url(connection.settings_dict)
    tmp = tmp_path_factory.mktemp(request.param)
    env = {
        "CACHE_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
        "MCP_BUS": bus_kind,
        "MCP_ENGINE_DEADLINE_SECONDS": str(DEADLINE_SECONDS),
    }
    with (
        running(waiting or "uvicorn", url, folder(tmp, "a"), **env) as first,
        running("uvicorn", url, folder(tmp, "b"), **env) as second,
        running("gunicorn", url, folder(tmp, "c"), **env) as third,
    ):
        yield first, second, third


@pytest.fixture
def keys() -> Iterator[redis.Redis]:
    client = redis.Redis(db=REDIS_DB)
    yield client
    for key in client.scan_iter(ASKED):
        client.delete(key)
    client.close()


@pytest.fixture
def acme() -> dict[str, Any]:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    other = Tenant.objects.create(slug="other", name="Other")
    bookkeeping.expose_many(tenant, ["demo.delete_note"])
    bookkeeping.expose_many(other, ["demo.delete_note"])
    alice = User.objects.create_user("alice")
    return {
        "note": Note.objects.create(tenant_id=tenant.pk, title="Groceries").pk,
        "alice": tokens.issue(tenant, alice).secret,
        "alice again": tokens.issue(tenant, alice).secret,
        "bob": tokens.issue(tenant, User.objects.create_user("bob")).secret,
        "alice at other": tokens.issue(other, alice).secret,
    }


def headers(secret: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
    }


class Deleting(StreamedCall):
    """A ``demo_delete_note`` call read as it streams, in a thread."""

    def __init__(self, server: Server, secret: str, note: int) -> None:
        body = {
            "jsonrpc": "2.0",
            "id": "del-1",
            "method": "tools/call",
            "params": {"name": "demo_delete_note", "arguments": {"id": note}},
        }
        super().__init__(f"{server.url}/t/acme/mcp", body, headers(secret))


def answer(
    server: Server,
    secret: str,
    request_id: Any,
    result: Any = ACCEPT,
    *,
    slug: str = "acme",
    error: bool = False,
) -> int:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error:
        message["error"] = {"code": -32601, "message": "Method not found"}
    else:
        message["result"] = result
    response = httpx2.post(
        f"{server.url}/t/{slug}/mcp",
        content=json.dumps(message),
        headers={**headers(secret), "Content-Type": "application/json"},
        timeout=20,
    )
    assert response.content == b""
    return response.status_code


def unavailable(result: dict[str, Any]) -> bool:
    return (
        bool(result["isError"])
        and "INPUT_UNAVAILABLE" in (result["content"][0]["text"])
    )


@pytest.mark.parametrize("answering", [1, 2], ids=["uvicorn", "gunicorn"])
def test_an_accepted_confirmation_posted_to_another_worker_deletes(
    pair, acme, keys, answering
):
    first, second = pair[0], pair[answering]
    call = Deleting(first, acme["alice"], acme["note"])
    question = call.question()

    assert call.content_type == "text/event-stream"
    assert question["params"]["requestedSchema"]["required"] == ["confirm"]
    assert len(list(keys.scan_iter(ASKED))) == 1
    assert answer(second, acme["alice"], question["id"]) == 202

    result = call.result()
    assert result["structuredContent"] == {"id": acme["note"], "deleted": True}
    assert not Note.objects.filter(pk=acme["note"]).exists()
    assert list(ToolCall.objects.values_list("request_id", "outcome")) == [
        ("del-1", "ok")
    ]
    assert list(keys.scan_iter(ASKED)) == []
    # A replay finds nothing to answer.
    assert answer(second, acme["alice"], question["id"]) == 202


def test_a_declined_confirmation_keeps_the_note(pair, acme, keys):
    first, second, _ = pair
    call = Deleting(first, acme["alice"], acme["note"])

    assert answer(second, acme["alice"], call.question()["id"], {"action": "decline"})

    assert call.result()["structuredContent"] == {
        "id": acme["note"],
        "deleted": False,
    }
    assert Note.objects.filter(pk=acme["note"]).exists()


def test_an_error_answer_is_input_unavailable(pair, acme, keys):
    first, second, _ = pair
    call = Deleting(first, acme["alice"], acme["note"])

    assert answer(second, acme["alice"], call.question()["id"], error=True) == 202

    assert unavailable(call.result())
    assert Note.objects.filter(pk=acme["note"]).exists()


def test_no_answer_is_input_unavailable_at_the_deadline_and_a_late_one_is_refused(
    pair, acme, keys
):
    first, second, _ = pair
    call = Deleting(first, acme["alice"], acme["note"])
    question = call.question()

    result = call.result()  # after DEADLINE_SECONDS: nobody answered

    assert unavailable(result)
    assert list(keys.scan_iter(ASKED)) == []
    assert answer(second, acme["alice"], question["id"]) == 202
    assert Note.objects.filter(pk=acme["note"]).exists()


def test_forged_and_random_answers_never_reach_the_engine(pair, acme, keys):
    first, second, _ = pair
    flood = [
        answer(second, acme["alice"], "mcpgw-" + secrets.token_urlsafe(24))
        for _ in range(100)
    ]
    call = Deleting(first, acme["alice"], acme["note"])
    qid = call.question()["id"]

    # Each would delete the note if it reached the engine.
    forged = [
        answer(second, acme["bob"], qid),
        answer(second, acme["alice again"], qid),  # the same user, another token
        answer(second, acme["alice at other"], qid, slug="other"),
        answer(second, acme["alice"], "del-1"),
        answer(second, acme["alice"], 1),
    ]
    assert set(flood) | set(forged) == {202}
    assert len(list(keys.scan_iter(ASKED))) == 1

    # The call still waits for its own caller, who declines.
    assert answer(second, acme["alice"], qid, {"action": "decline"}) == 202
    assert call.result()["structuredContent"]["deleted"] is False
    assert Note.objects.filter(pk=acme["note"]).exists()


def test_a_client_that_takes_no_event_stream_is_not_asked(pair, acme):
    first, _, _ = pair
    response = httpx2.post(
        f"{first.url}/t/acme/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "demo_delete_note", "arguments": {"id": acme["note"]}},
        },
        headers={**headers(acme["alice"]), "Accept": "application/json"},
        timeout=20,
    )

    assert response.headers["content-type"].startswith("application/json")
    assert unavailable(response.json()["result"])


def test_a_cancel_while_the_gateway_asks_for_confirmation_runs_nothing(
    pair, acme, keys
):
    """Staff marked the tool: the gateway's own question goes out first; the
    client's ``notifications/cancelled``, POSTed to another worker, ends the
    wait, and the engine never runs."""
    first, second, _ = pair
    exposure = Tenant.objects.get(slug="acme").exposures.get()
    bookkeeping.require_confirmation(exposure, True)
    call = Deleting(first, acme["alice"], acme["note"])
    question = call.question()
    assert "Confirm the call to demo_delete_note" in question["params"]["message"]
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": "del-1", "reason": "user"},
    }

    for _ in range(100):  # until the call is noted (after 50 ms) and heard
        sent = httpx2.post(
            f"{second.url}/t/acme/mcp",
            content=json.dumps(cancel),
            headers={**headers(acme["alice"]), "Content-Type": "application/json"},
            timeout=20,
        )
        assert sent.status_code == 202
        call.wait(0.1)
        if not call.running:
            break

    result = call.result()
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["code"] == "CANCELLED"
    assert Note.objects.filter(pk=acme["note"]).exists()
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["cancelled"]


@pytest.mark.parametrize("asker", ["engine", "gateway"])
def test_a_client_that_hangs_up_while_asked_cancels_the_call(pair, acme, keys, asker):
    """The question (the engine's, or the gateway's confirmation staff asked
    for) is out; the client closes its connection. The waiting server
    notices (uvicorn tells the view; gunicorn's stream peeks at the socket),
    stops waiting, forgets the question and records the call cancelled; an
    answer sent after finds nothing."""
    first, second, _ = pair
    if asker == "gateway":
        exposure = Tenant.objects.get(slug="acme").exposures.get()
        bookkeeping.require_confirmation(exposure, True)
    body = {
        "jsonrpc": "2.0",
        "id": "del-1",
        "method": "tools/call",
        "params": {"name": "demo_delete_note", "arguments": {"id": acme["note"]}},
    }
    with httpx2.stream(
        "POST",
        f"{first.url}/t/acme/mcp",
        json=body,
        headers=headers(acme["alice"]),
        timeout=20,
    ) as response:
        question = next(
            event.data
            for event in events(response)
            if event.data is not None and event.data.get("method")
        )
    # The block has closed the connection.

    for _ in range(100):
        if ToolCall.objects.exists() and not list(keys.scan_iter(ASKED)):
            break
        time.sleep(0.05)
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["cancelled"]
    assert list(keys.scan_iter(ASKED)) == []
    assert answer(second, acme["alice"], question["id"]) == 202
    assert Note.objects.filter(pk=acme["note"]).exists()
