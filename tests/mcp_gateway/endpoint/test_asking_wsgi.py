"""A 2025 call's questions under WSGI, through Django's test client.

The answer is POSTed while the stream waits, as a second request (the
in-process bus carries it as Redis or PostgreSQL would across workers; the
live tests, ``tests/http/test_asking_live.py``, run gunicorn).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import DatabaseError, transaction
from django.test import Client

from demo.models import Note
from engines_app.context import EngineContext
from engines_app.engine import Engine
from engines_app.interaction import InputRequest
from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, jsonrpc
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.dispatch import approval, asking
from mcp_gateway.endpoint import asking as streaming

pytestmark = pytest.mark.django_db(transaction=True)

VERSION = "2025-11-25"
ACCEPT = {"action": "accept", "content": {"confirm": True}}


@pytest.fixture(autouse=True)
def _local_bus(local_bus: None) -> None:
    """Every test here on the in-process bus."""


def headers(
    token: str, accept: str = "application/json, text/event-stream"
) -> dict[str, Any]:
    return {
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "HTTP_ACCEPT": accept,
        "HTTP_MCP_PROTOCOL_VERSION": VERSION,
    }


def post(client: Client, token: str, body: dict[str, Any], **extra: Any) -> Any:
    return client.post(
        "/t/acme/mcp",
        data=json.dumps(body),
        content_type="application/json",
        **{**headers(token), **extra},
    )


def call(client: Client, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    body = {
        "jsonrpc": "2.0",
        "id": "call-1",
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return post(client, token, body)


def events(chunks: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """The stream's messages, one at a time (keep-alives skipped)."""
    for chunk in chunks:
        for line in chunk.decode().splitlines():
            if line.startswith("data: "):
                yield json.loads(line[len("data: ") :])


def reply(client: Client, token: str, request_id: Any, result: Any) -> int:
    body = {"jsonrpc": "2.0", "id": request_id, "result": result}
    status: int = post(client, token, body).status_code
    return status


@pytest.fixture
def note(tenant) -> int:
    bookkeeping.expose_many(tenant, ["demo.delete_note"])
    return Note.objects.create(tenant_id=tenant.pk, title="Groceries").pk


def test_a_confirmation_is_asked_on_a_stream_and_its_answer_deletes(
    client, token, note
):
    response = call(client, token, "demo_delete_note", {"id": note})

    assert response["Content-Type"] == "text/event-stream"
    stream = events(iter(response.streaming_content))
    question = next(stream)
    assert question["method"] == "elicitation/create"
    assert asking.is_question_id(question["id"])
    assert reply(client, token, question["id"], ACCEPT) == 202
    result = next(stream)
    assert result["id"] == "call-1"
    assert result["result"]["structuredContent"] == {"id": note, "deleted": True}
    assert list(stream) == []
    response.close()
    assert not Note.objects.filter(pk=note).exists()
    assert list(ToolCall.objects.values_list("request_id", "outcome")) == [
        ("call-1", "ok")
    ]
    assert asking.waiting_count() == 0


@pytest.fixture
def fixtures(tenant) -> None:
    bookkeeping.expose_many(
        tenant, ["test_sampling", "test_elicitation", "test_simple_text"]
    )


def test_an_engines_sampling_request_is_asked_and_its_answer_runs_it_on(
    client, token, fixtures
):
    response = call(client, token, "test_sampling", {"prompt": "Capital?"})

    stream = events(iter(response.streaming_content))
    question = next(stream)
    assert question["method"] == "sampling/createMessage"
    assert question["params"]["messages"][0]["content"]["text"] == "Capital?"
    sampled = {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris."},
        "model": "m",
    }
    assert reply(client, token, question["id"], sampled) == 202
    result = next(stream)["result"]
    response.close()
    assert result["content"][0]["text"] == "LLM response: Paris."
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok"]


def test_a_call_that_asks_nothing_is_plain_json(client, token, fixtures):
    response = call(client, token, "test_simple_text", {})

    assert response["Content-Type"] == "application/json"
    assert response.json()["result"]["content"][0]["type"] == "text"
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok"]


def test_a_client_without_an_event_stream_is_not_asked(client, token, fixtures):
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "test_elicitation", "arguments": {}},
    }
    response = post(client, token, body, HTTP_ACCEPT="application/json")

    assert response["Content-Type"] == "application/json"
    assert "INPUT_UNAVAILABLE" in response.json()["result"]["content"][0]["text"]
    assert asking.waiting_count() == 0


def test_a_stream_closed_while_waiting_cancels_the_call(client, token, fixtures):
    response = call(client, token, "test_elicitation", {})
    stream = events(iter(response.streaming_content))
    question = next(stream)

    response.close()  # what the server does once a write has failed

    assert asking.waiting_count() == 0
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["cancelled"]
    # The answer comes too late: nothing waits for it.
    answer = {"action": "accept", "content": {"username": "a", "email": "b"}}
    assert reply(client, token, question["id"], answer) == 202
    assert ToolCall.objects.count() == 1


def test_the_gateways_own_confirmation_is_asked_and_a_hang_up_cancels_it(
    client, token, tenant, note
):
    bookkeeping.require_confirmation(tenant.exposures.get(), True)
    response = call(client, token, "demo_delete_note", {"id": note})
    stream = events(iter(response.streaming_content))
    question = next(stream)
    assert "Confirm the call to demo_delete_note" in question["params"]["message"]

    response.close()

    assert asking.waiting_count() == 0
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["cancelled"]
    assert Note.objects.filter(pk=note).exists()


def test_the_gateways_own_confirmation_accepted_runs_the_engine(
    client, token, tenant, note
):
    bookkeeping.require_confirmation(tenant.exposures.get(), True)
    response = call(client, token, "demo_delete_note", {"id": note})
    stream = events(iter(response.streaming_content))
    question = next(stream)
    assert reply(client, token, question["id"], ACCEPT) == 202
    # The engine's own confirmation follows the gateway's.
    second = next(stream)
    assert second["method"] == "elicitation/create"
    assert reply(client, token, second["id"], ACCEPT) == 202
    result = next(stream)["result"]
    response.close()

    assert result["structuredContent"] == {"id": note, "deleted": True}
    outcomes = ToolCall.objects.order_by("pk").values_list("outcome", flat=True)
    assert list(outcomes) == ["confirmed", "ok"]


def test_a_stream_closed_before_it_was_read_cancels_the_call(client, token, fixtures):
    response = call(client, token, "test_elicitation", {})
    assert response["Content-Type"] == "text/event-stream"
    assert asking.waiting_count() == 1

    response.close()  # a server or middleware that never iterates it

    assert asking.waiting_count() == 0
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["cancelled"]


def test_keep_alives_go_out_while_the_client_thinks(client, token, fixtures, settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "SSE_KEEPALIVE_SECONDS": 0.3}
    response = call(client, token, "test_elicitation", {})
    chunks = iter(response.streaming_content)
    question = json.loads(next(chunks).decode().split("data: ", 1)[1])

    assert next(chunks) == b": keep-alive\n\n"  # nobody answered yet
    answer = {"action": "accept", "content": {"username": "a", "email": "b@c"}}
    assert reply(client, token, question["id"], answer) == 202
    rest = b"".join(chunks)
    response.close()
    assert b"Elicitation completed: action=accept" in rest
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok"]


def test_a_database_failure_after_the_question_is_an_error_in_the_stream(
    client, token, tenant, note, monkeypatch
):
    """The gateway's confirmation row cannot be written once the answer is
    in: the stream, committed to 200, ends with a JSON-RPC error that says
    nothing of the failure, and the tool does not run."""
    bookkeeping.require_confirmation(tenant.exposures.get(), True)
    response = call(client, token, "demo_delete_note", {"id": note})
    stream = events(iter(response.streaming_content))
    question = next(stream)

    def down(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("relation demo_note: connection refused")

    monkeypatch.setattr(approval, "_record_confirmed", down)
    assert reply(client, token, question["id"], ACCEPT) == 202
    final = next(stream)
    response.close()

    assert final["error"]["code"] == jsonrpc.INTERNAL_ERROR
    assert "demo_note" not in json.dumps(final)
    assert final["id"] == "call-1"
    assert Note.objects.filter(pk=note).exists()


def test_only_a_wsgi_request_outside_a_transaction_is_asked(rf, async_rf):
    message = jsonrpc.Message(
        "request", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}
    )
    extra = {
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": VERSION,
    }
    wsgi = rf.post("/t/acme/mcp", **extra)
    asgi = async_rf.post(
        "/t/acme/mcp",
        headers={
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
        },
    )

    assert streaming.can_ask(wsgi, message)
    assert not streaming.can_ask(asgi, message)  # the sync view under ASGI
    with transaction.atomic():  # ATOMIC_REQUESTS
        assert not streaming.can_ask(wsgi, message)


class CancelledWhileRunning(Engine):
    """Its first run lasts until the client's cancel has reached it, then
    asks: nothing may be asked of a cancelled call."""

    id = "test.cancelled_while_running"
    name = "Cancelled while running"
    description = "Asks once its call is cancelled."
    input_schema = {"type": "object", "additionalProperties": False}
    token = ""

    def execute(self, context: EngineContext) -> Any:
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "call-1"},
        }
        other = Client()
        for _ in range(200):  # until the call is noted for a cancel
            post(other, self.token, cancel)
            if context.signal.wait(0.05):
                break
        return InputRequest("Too late?", {"x": {"type": "string"}}, ("x",))


def test_a_cancel_during_the_first_run_asks_nothing_and_is_audited(
    client, token, tenant
):
    engine = CancelledWhileRunning()
    engine.token = token
    default_registry.register(engine)
    try:
        bookkeeping.expose_many(tenant, [engine.id])
        response = call(client, token, "test_cancelled_while_running", {})
    finally:
        default_registry.unregister(engine.id)

    assert response["Content-Type"] == "application/json"
    assert asking.waiting_count() == 0
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["cancelled"]
