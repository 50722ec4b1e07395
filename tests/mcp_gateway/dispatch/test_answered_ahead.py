"""A first 2026-07-28 call that brings its answers along, over HTTP.

``inputResponses`` without a ``requestState`` answer the engine's questions
when those carry no engine state and every key has an answer of its kind:
the engine runs again with them and the call completes (extra keys are
ignored). A missing or unfit answer is asked for; a confirmation, the
gateway's or the engine's own, is always asked first.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client

from demo.models import Note
from mcp_gateway import bookkeeping
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.catalog import clear_cache
from mcp_gateway.models import Exposure, Tenant
from tests.rpc import result_of

MODERN = "2026-07-28"
ELICITATION = "test_input_required_result_elicitation"
ALICE = {"action": "accept", "content": {"name": "Alice"}}
EXTRAS = {
    "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
    "another_unexpected": {"action": "accept", "content": {"baz": 123}},
}
CONFIRMED = {"action": "accept", "content": {"confirm": True}}
CAPABILITIES = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}


@pytest.fixture
def exposed(tenant: Tenant) -> Tenant:
    clear_cache()
    bookkeeping.expose_many(
        tenant,
        [
            ELICITATION,
            "test_input_required_result_multi_round",
            "demo.delete_note",
        ],
    )
    return tenant


def call(
    token: str,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
    asgi: bool = False,
    **more: Any,
) -> tuple[int, Any]:
    """POST one 2026-07-28 ``tools/call`` to the acme tenant's endpoint."""
    params: dict[str, Any] = {
        "name": name,
        "arguments": arguments or {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": (
                CAPABILITIES if capabilities is None else capabilities
            ),
        },
        **more,
    }
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    )
    headers = {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    if asgi:
        answered = async_to_sync(AsyncClient().post)(
            "/t/acme/mcp", body, content_type="application/json", headers=headers
        )
        return answered.status_code, answered.json()
    response = Client().post(
        "/t/acme/mcp", body, content_type="application/json", headers=headers
    )
    return response.status_code, response.json()


def rows() -> list[tuple[str, str, str, str]]:
    return list(
        ToolCall.objects.order_by("pk").values_list(
            "tool_name", "engine_id", "outcome", "error_code"
        )
    )


@pytest.mark.parametrize("asgi", [False, True], ids=["wsgi", "asgi"])
def test_a_first_call_answered_ahead_completes_and_extra_keys_are_ignored(
    exposed, token, asgi
):
    responses = {"user_name": ALICE, **EXTRAS}

    done = result_of(call(token, ELICITATION, inputResponses=responses, asgi=asgi))

    assert done["resultType"] == "complete"
    assert done["content"] == [{"type": "text", "text": "Hello, Alice!"}]
    assert done.get("isError") is not True
    assert rows() == [(ELICITATION, ELICITATION, "ok", "")]  # one row, as any call


def test_a_first_call_answering_the_wrong_key_is_asked_and_can_retry(exposed, token):
    asked = result_of(
        call(token, ELICITATION, inputResponses={"wrong_key": ALICE, **EXTRAS})
    )
    done = result_of(
        call(
            token,
            ELICITATION,
            inputResponses={"user_name": ALICE},
            requestState=asked["requestState"],
        )
    )

    assert asked["resultType"] == "input_required"
    assert list(asked["inputRequests"]) == ["user_name"]
    assert done["content"][0]["text"] == "Hello, Alice!"


@pytest.mark.parametrize(
    "answer",
    [
        {"roots": [{"uri": "file:///work"}]},  # a roots/list result
        {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
    ],
    ids=["roots-result", "sampling-result"],
)
def test_an_answer_unfit_for_its_question_is_asked_again(exposed, token, answer):
    asked = result_of(call(token, ELICITATION, inputResponses={"user_name": answer}))

    assert asked["resultType"] == "input_required"
    assert list(asked["inputRequests"]) == ["user_name"]
    assert asked["requestState"].startswith("v1.")


def test_an_answer_ahead_needs_the_declared_capability(exposed, token):
    status, body = call(
        token,
        ELICITATION,
        capabilities={"roots": {}},
        inputResponses={"user_name": ALICE},
    )

    assert status == 400
    assert body["error"]["code"] == -32021


def test_a_question_with_engine_state_is_asked_whatever_came_along(exposed, token):
    name = "test_input_required_result_multi_round"
    step1 = {"action": "accept", "content": {"name": "Alice"}}

    asked = result_of(call(token, name, inputResponses={"step1": step1}))

    assert asked["resultType"] == "input_required"
    assert list(asked["inputRequests"]) == ["step1"]


def test_a_forged_state_is_refused_even_with_answers_that_would_do(exposed, token):
    status, body = call(
        token,
        ELICITATION,
        inputResponses={"user_name": ALICE},
        requestState="v1.forged",
    )

    assert status == 400
    assert body["error"]["code"] == -32602


def test_the_gateways_confirmation_is_never_answered_ahead(exposed, token):
    exposure = Exposure.objects.get(tenant=exposed, engine_id="demo.delete_note")
    bookkeeping.require_confirmation(exposure, True)
    clear_cache()
    note = Note.objects.create(tenant=exposed, title="groceries")
    responses = {"confirm": CONFIRMED, "input": CONFIRMED}

    asked = result_of(
        call(token, "demo_delete_note", {"id": note.pk}, inputResponses=responses)
    )

    assert asked["resultType"] == "input_required"
    assert list(asked["inputRequests"]) == ["confirm"]
    assert Note.objects.filter(pk=note.pk).exists()
    assert [row[2] for row in rows()] == ["awaiting"]


def test_an_engines_own_confirmation_is_never_answered_ahead(exposed, token):
    note = Note.objects.create(tenant=exposed, title="groceries")

    asked = result_of(
        call(
            token,
            "demo_delete_note",
            {"id": note.pk},
            inputResponses={"input": CONFIRMED},
        )
    )

    assert asked["resultType"] == "input_required"
    assert list(asked["inputRequests"]) == ["input"]
    assert "groceries" in asked["inputRequests"]["input"]["params"]["message"]
    assert Note.objects.filter(pk=note.pk).exists()
