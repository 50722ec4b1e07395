"""Multi round-trip confirmation through ``dispatch.core.handle`` (2026-07-28)."""

from __future__ import annotations

import time
from typing import Any
from unittest import mock

import pytest

from demo.models import Note
from engines_app.context import Principal
from mcp_gateway import bookkeeping
from mcp_gateway.catalog import catalog_for, clear_cache
from mcp_gateway.dispatch.core import handle
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.models import Tenant
from tests.mcp_gateway.dispatch.outcomes import result_of

pytestmark = pytest.mark.django_db(transaction=True)

MODERN = "2026-07-28"
ACCEPTED = {"input": {"action": "accept", "content": {"confirm": True}}}


@pytest.fixture
def tenant() -> Tenant:
    clear_cache()
    tenant = Tenant.objects.create(slug="notes", name="Notes")
    bookkeeping.expose_many(tenant, ["demo.add_note", "demo.delete_note"])
    tenant.refresh_from_db()
    return tenant


@pytest.fixture
def note(tenant: Tenant) -> Note:
    return Note.objects.create(tenant=tenant, title="groceries")


def principal(tenant: Tenant, user: str = "alice") -> Principal:
    return Principal(
        tenant=tenant.slug,
        tenant_id=tenant.pk,
        user=user,
        scopes=frozenset({"mcp:tools"}),
    )


def delete(
    tenant: Tenant,
    arguments: dict[str, Any],
    *,
    user: str = "alice",
    version: str = MODERN,
    elicitation: bool = True,
    **retry: Any,
) -> Outcome:
    params: dict[str, Any] = {"name": "demo_delete_note", "arguments": arguments}
    headers = {"MCP-Protocol-Version": version}
    if version == MODERN:
        capabilities: dict[str, Any] = (
            {"elicitation": {"form": {}}} if elicitation else {}
        )
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": "demo_delete_note"}
    params.update(retry)
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    scope = CallScope(tenant, catalog_for(tenant), principal(tenant, user), headers)
    return handle(message, scope)


def asked(tenant: Tenant, note: Note) -> str:
    first = result_of(delete(tenant, {"id": note.pk}))
    assert first["resultType"] == "input_required"
    state: str = first["requestState"]
    return state


def refused_with_invalid_params(outcome: Outcome) -> bool:
    assert outcome.json is not None
    return outcome.status == 400 and outcome.json["error"]["code"] == -32602


def test_a_destructive_engine_asks_for_confirmation_first(tenant, note):
    first = result_of(delete(tenant, {"id": note.pk}))

    elicit = first["inputRequests"]["input"]
    assert elicit["method"] == "elicitation/create"
    assert elicit["params"]["requestedSchema"]["required"] == ["confirm"]
    assert "groceries" in elicit["params"]["message"]
    assert first["requestState"].startswith("v1.")
    assert "groceries" not in first["requestState"]  # sealed, not readable
    assert Note.objects.filter(pk=note.pk).exists()


def test_the_confirmed_retry_deletes_the_note(tenant, note):
    state = asked(tenant, note)

    done = result_of(
        delete(tenant, {"id": note.pk}, inputResponses=ACCEPTED, requestState=state)
    )

    assert done["structuredContent"] == {"id": note.pk, "deleted": True}
    assert not Note.objects.filter(pk=note.pk).exists()


@pytest.mark.parametrize(
    "change",
    [
        {"requestState": "v1.forged"},
        {"user": "bob"},
        {"arguments": {"id": 999}},
    ],
    ids=["forged", "other-principal", "other-arguments"],
)
def test_a_state_that_does_not_match_is_refused(tenant, note, change):
    state = asked(tenant, note)
    retry = {"requestState": state, "inputResponses": ACCEPTED, **change}
    arguments = retry.pop("arguments", {"id": note.pk})

    outcome = delete(tenant, arguments, **retry)

    assert refused_with_invalid_params(outcome)
    assert Note.objects.filter(pk=note.pk).exists()


def test_an_expired_state_is_refused(tenant, note, settings):
    state = asked(tenant, note)
    later = time.time() + 601

    with mock.patch("mcp.server.request_state.time.time", return_value=later):
        outcome = delete(
            tenant, {"id": note.pk}, inputResponses=ACCEPTED, requestState=state
        )

    assert refused_with_invalid_params(outcome)
    assert Note.objects.filter(pk=note.pk).exists()


def test_answers_without_a_state_are_ignored_and_the_question_asked(tenant, note):
    body = result_of(delete(tenant, {"id": note.pk}, inputResponses=ACCEPTED))

    assert body["resultType"] == "input_required"
    assert list(body["inputRequests"]) == ["input"]
    assert Note.objects.filter(pk=note.pk).exists()


def test_a_2025_client_without_a_stream_gets_a_tool_error(tenant, note):
    outcome = delete(tenant, {"id": note.pk}, version="2025-11-25")

    body = result_of(outcome)
    assert body["isError"] is True
    assert "unavailable on this protocol version" in body["content"][0]["text"]
    assert Note.objects.filter(pk=note.pk).exists()


def test_a_modern_client_without_elicitation_is_refused_with_32021(tenant, note):
    outcome = delete(tenant, {"id": note.pk}, elicitation=False)

    assert outcome.status == 400
    assert outcome.json is not None
    error = outcome.json["error"]
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert Note.objects.filter(pk=note.pk).exists()


def multi_round(tenant: Tenant, **retry: Any) -> dict[str, Any]:
    name = "test_input_required_result_multi_round"
    params: dict[str, Any] = {
        "name": name,
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
        **retry,
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    scope = CallScope(
        tenant, catalog_for(tenant), principal(tenant), headers | {"Mcp-Name": name}
    )
    return result_of(handle(message, scope))


def test_each_round_asks_under_the_key_the_engine_names(tenant):
    bookkeeping.expose_many(tenant, ["test_input_required_result_multi_round"])
    clear_cache()

    first = multi_round(tenant)
    answer = {"step1": {"action": "accept", "content": {"name": "Alice"}}}
    second = multi_round(
        tenant, inputResponses=answer, requestState=first["requestState"]
    )
    answer = {"step2": {"action": "accept", "content": {"color": "blue"}}}
    done = multi_round(
        tenant, inputResponses=answer, requestState=second["requestState"]
    )

    assert list(first["inputRequests"]) == ["step1"]
    assert list(second["inputRequests"]) == ["step2"]
    assert done["content"][0]["text"] == "Alice likes blue"
