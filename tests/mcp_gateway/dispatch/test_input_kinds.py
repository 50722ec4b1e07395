"""Every kind of engine question on 2026-07-28, through ``dispatch.core.handle``.

The fixture engines of ``demo.conformance`` ask a model (sampling), the
roots, several questions in one round, and only what the client declared;
the mapping of a URL question is checked on :mod:`interaction` itself.
"""

from __future__ import annotations

import json
import time
from typing import Any
from unittest import mock

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from engines_app.context import Principal
from engines_app.interaction import (
    ALL_KINDS,
    InputReply,
    InputRequest,
    InputRound,
    Message,
    ModelReply,
    ModelRequest,
    Root,
    RootsReply,
    RootsRequest,
    UrlRequest,
    confirm,
)
from mcp_gateway import bookkeeping
from mcp_gateway.audit.callrecord import CallRecord
from mcp_gateway.catalog import catalog_for, clear_cache
from mcp_gateway.conf import gateway_settings
from mcp_gateway.dispatch import interaction
from mcp_gateway.dispatch.core import handle
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.models import Tenant
from tests.mcp_gateway.dispatch.outcomes import result_of

MODERN = "2026-07-28"
SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "Paris."},
    "model": "test-model",
    "stopReason": "endTurn",
}
ROOTS = {"roots": [{"uri": "file:///work/a", "name": "A"}, {"uri": "file:///b"}]}
EVERY_CAPABILITY: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {},
    "roots": {},
}


@pytest.fixture
def tenant(db: Any) -> Tenant:
    clear_cache()
    return Tenant.objects.create(slug="kinds", name="Kinds")


def call(
    tenant: Tenant,
    name: str,
    capabilities: dict[str, Any] | None = None,
    record: CallRecord | None = None,
    **retry: Any,
) -> Outcome:
    if not tenant.exposures.filter(engine_id=name).exists():
        bookkeeping.expose_many(tenant, [name])
        clear_cache()
    params: dict[str, Any] = {
        "name": name,
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": (
                EVERY_CAPABILITY if capabilities is None else capabilities
            ),
        },
        **retry,
    }
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    principal = Principal(
        tenant=tenant.slug,
        tenant_id=tenant.pk,
        user="alice",
        scopes=frozenset({"mcp:tools"}),
    )
    scope = CallScope(tenant, catalog_for(tenant), principal, headers, record=record)
    return handle(message, scope)


def text_of(body: dict[str, Any]) -> str:
    assert body.get("resultType") == "complete", body
    text: str = body["content"][0]["text"]
    return text


def error_of(outcome: Outcome) -> dict[str, Any]:
    assert outcome.json is not None
    assert outcome.status == 400
    error: dict[str, Any] = outcome.json["error"]
    return error


def test_sampling_is_asked_as_create_message_and_answered_by_key(tenant):
    name = "test_input_required_result_sampling"
    first = result_of(call(tenant, name))
    responses = {"capital_question": SAMPLED}
    done = result_of(
        call(tenant, name, inputResponses=responses, requestState=first["requestState"])
    )

    request = first["inputRequests"]["capital_question"]
    assert request["method"] == "sampling/createMessage"
    assert request["params"]["maxTokens"] == 100
    assert request["params"]["messages"] == [
        {
            "role": "user",
            "content": {"type": "text", "text": "What is the capital of France?"},
        }
    ]
    assert text_of(done) == "The model (test-model) said: Paris."


def test_roots_are_asked_as_roots_list_and_answered_by_key(tenant):
    name = "test_input_required_result_list_roots"
    first = result_of(call(tenant, name))
    responses = {"client_roots": ROOTS}
    done = result_of(
        call(tenant, name, inputResponses=responses, requestState=first["requestState"])
    )

    assert first["inputRequests"]["client_roots"]["method"] == "roots/list"
    assert text_of(done) == "Roots: file:///work/a, file:///b"


def test_a_round_asks_every_kind_at_once_and_the_engine_gets_each_by_key(tenant):
    name = "test_input_required_result_multiple_inputs"
    first = result_of(call(tenant, name))
    responses = {
        "user_name": {"action": "accept", "content": {"name": "Alice"}},
        "greeting": SAMPLED | {"content": {"type": "text", "text": "Hello"}},
        "client_roots": ROOTS,
    }
    done = result_of(
        call(tenant, name, inputResponses=responses, requestState=first["requestState"])
    )

    methods = {key: r["method"] for key, r in first["inputRequests"].items()}
    assert methods == {
        "user_name": "elicitation/create",
        "greeting": "sampling/createMessage",
        "client_roots": "roots/list",
    }
    assert text_of(done) == (
        "Hello Alice (roots: file:///work/a, file:///b; state=multiple)"
    )


def test_a_retry_missing_an_answer_is_asked_the_same_requests_again(tenant):
    name = "test_input_required_result_multiple_inputs"
    first = result_of(call(tenant, name))
    partial = {"user_name": {"action": "accept", "content": {"name": "Alice"}}}
    again = result_of(
        call(tenant, name, inputResponses=partial, requestState=first["requestState"])
    )
    responses = {
        **partial,
        "greeting": SAMPLED,
        "client_roots": ROOTS,
    }
    done = result_of(
        call(tenant, name, inputResponses=responses, requestState=again["requestState"])
    )

    assert again["resultType"] == "input_required"
    assert again["inputRequests"] == first["inputRequests"]
    assert text_of(done).startswith("Paris. Alice")


def test_answers_without_a_state_do_not_answer_a_question_with_engine_state(tenant):
    # Its state must come back sealed; a first call has none to bring.
    name = "test_input_required_result_request_state"
    responses = {"confirm": {"action": "accept", "content": {"ok": True}}}
    body = result_of(call(tenant, name, inputResponses=responses))

    assert body["resultType"] == "input_required"
    assert list(body["inputRequests"]) == ["confirm"]


def test_extra_answers_on_a_retry_are_ignored(tenant):
    name = "test_input_required_result_list_roots"
    first = result_of(call(tenant, name))
    responses = {"client_roots": ROOTS, "stray": {"action": "accept"}}
    done = result_of(
        call(tenant, name, inputResponses=responses, requestState=first["requestState"])
    )

    assert text_of(done) == "Roots: file:///work/a, file:///b"


def test_an_answer_of_the_wrong_kind_is_refused(tenant):
    name = "test_input_required_result_sampling"
    first = result_of(call(tenant, name))
    wrong: dict[str, Any] = {"capital_question": {"roots": []}}
    outcome = call(
        tenant, name, inputResponses=wrong, requestState=first["requestState"]
    )

    assert error_of(outcome)["code"] == -32602


def test_the_engine_asks_only_what_the_client_declared(tenant):
    name = "test_input_required_result_capabilities"
    sampling_only = result_of(call(tenant, name, {"sampling": {}}))
    both = result_of(call(tenant, name, {"sampling": {}, "elicitation": {}}))

    assert list(sampling_only["inputRequests"]) == ["colour"]
    assert list(both["inputRequests"]) == ["colour", "name"]


@pytest.mark.parametrize(
    ("name", "capabilities", "missing"),
    [
        ("test_missing_capability", {}, {"sampling": {}}),
        ("test_input_required_result_list_roots", {"sampling": {}}, {"roots": {}}),
        (
            "test_input_required_result_multiple_inputs",
            {"elicitation": {}},
            {"sampling": {}, "roots": {}},
        ),
        ("test_input_required_result_elicitation", {"roots": {}}, {"elicitation": {}}),
    ],
)
def test_a_question_the_client_did_not_declare_is_32021(
    tenant, name, capabilities, missing
):
    error = error_of(call(tenant, name, capabilities))

    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": missing}


# -- The mapping itself: URL mode, what each capability allows ---------------------


def test_a_url_question_is_url_mode_elicitation_without_an_id_on_2026():
    asked = UrlRequest("Sign in first", "https://example.com/consent", key="consent")
    kinds = interaction.answerable(MODERN, meta({"elicitation": {"url": {}}}))

    required = interaction.input_required(asked, kinds=kinds)

    assert required.input_requests is not None
    dumped = required.input_requests["consent"].model_dump(
        by_alias=True, mode="json", exclude_none=True
    )
    assert dumped == {
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "message": "Sign in first",
            "url": "https://example.com/consent",
        },
    }


def test_a_url_question_on_2025_11_25_carries_an_elicitation_id():
    method, params = interaction.wire_params(
        UrlRequest("Sign in", "https://example.com/x"), "2025-11-25"
    )

    assert method == "elicitation/create"
    assert params["mode"] == "url"
    assert isinstance(params["elicitationId"], str)
    assert len(params["elicitationId"]) >= 16


@pytest.mark.parametrize(
    ("capabilities", "kinds"),
    [
        ({}, set()),
        ({"elicitation": {}}, {"form"}),
        ({"elicitation": {"form": {}}}, {"form"}),
        ({"elicitation": {"url": {}}}, {"url"}),
        ({"elicitation": {"form": {}, "url": {}}}, {"form", "url"}),
        ({"sampling": {}}, {"model"}),
        ({"roots": {"listChanged": True}}, {"roots"}),
    ],
)
def test_what_each_declared_capability_lets_an_engine_ask(capabilities, kinds):
    assert interaction.answerable(MODERN, meta(capabilities)) == kinds
    assert interaction.answerable("2025-11-25", meta(capabilities)) == set()


def test_a_form_only_client_is_refused_a_url_question_with_the_url_mode_named():
    asked = UrlRequest("Pay here", "https://example.com/pay")

    with pytest.raises(MCPError) as refused:
        interaction.input_required(asked, kinds=frozenset({"form"}))

    assert refused.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.error.data == {
        "requiredCapabilities": {"elicitation": {"url": {}}}
    }


def test_each_kind_of_answer_maps_back_to_the_engine():
    url = interaction.answer_of("url", {"action": "accept"}, "s")
    form = interaction.answer_of("form", {"action": "decline"}, "s")
    model = interaction.answer_of("model", SAMPLED, "s")
    roots = interaction.answer_of("roots", ROOTS, "s")

    assert url == InputReply(action="accept", content={}, state="s")
    assert form == InputReply(action="decline", content={}, state="s")
    assert model == ModelReply(
        text="Paris.", model="test-model", stop_reason="endTurn", state="s"
    )
    assert roots == RootsReply(
        roots=(Root("file:///work/a", "A"), Root("file:///b")), state="s"
    )
    assert interaction.answer_of("model", {"action": "accept"}, "s") is None
    assert interaction.answer_of("roots", 12345, "s") is None


def test_a_rounds_state_names_each_key_and_kind_and_keeps_the_requests():
    asked = InputRound(
        (
            InputRequest("Name?", {"name": {"type": "string"}}, key="n"),
            ModelRequest(
                (Message("user", "Hi"),),
                max_tokens=5,
                system_prompt="Be brief.",
                temperature=0.5,
                stop_sequences=("\n",),
                key="m",
            ),
            RootsRequest(key="r"),
        ),
        state="round",
    )

    required = interaction.input_required(asked, kinds=ALL_KINDS)

    assert required.request_state is not None
    sealed = json.loads(required.request_state)
    assert sealed["q"] == {"n": "form", "m": "model", "r": "roots"}
    assert sealed["s"] == "round"
    assert required.input_requests is not None
    model = required.input_requests["m"].model_dump(
        by_alias=True, mode="json", exclude_none=True
    )
    assert model["params"] == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
        "maxTokens": 5,
        "systemPrompt": "Be brief.",
        "temperature": 0.5,
        "stopSequences": ["\n"],
    }


def meta(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {"io.modelcontextprotocol/clientCapabilities": capabilities}


@pytest.mark.parametrize(
    ("name", "capabilities"),
    [
        ("test_missing_capability", {}),  # the gateway's own plain path
        ("test_input_required_result_list_roots", {"sampling": {}}),  # the SDK's
    ],
)
def test_a_32021_refusal_is_audited_invalid_with_its_code(tenant, name, capabilities):
    record = CallRecord()

    error = error_of(call(tenant, name, capabilities, record=record))

    assert error["code"] == -32021
    assert (record.outcome, record.error_code) == ("invalid", "-32021")
    assert record.engine_id == name


def test_asking_again_never_extends_a_rounds_expiry(tenant):
    ttl = gateway_settings().REQUEST_STATE_TTL_SECONDS
    name = "test_input_required_result_list_roots"
    start = time.time()
    first = result_of(call(tenant, name))
    with mock.patch("time.time", return_value=start + ttl - 10):
        again = result_of(call(tenant, name, requestState=first["requestState"]))
    with mock.patch("time.time", return_value=start + ttl + 10):
        late = call(
            tenant,
            name,
            inputResponses={"client_roots": ROOTS},
            requestState=again["requestState"],
        )

    assert again["resultType"] == "input_required"
    assert again["requestState"] != first["requestState"]  # resealed
    assert error_of(late)["code"] == -32602


# -- Answers brought on a first call (interaction.answered_ahead) ------------------

NAME = InputRequest("Name?", {"name": {"type": "string"}}, key="n")
ACCEPTED = {"action": "accept", "content": {"name": "Alice"}}


def test_a_stateless_round_answered_by_key_is_answered_ahead_extras_ignored():
    asked = InputRound((NAME, RootsRequest(key="r"), ModelRequest((), 5, key="m")))
    responses = {"n": ACCEPTED, "r": ROOTS, "m": SAMPLED, "stray": {"roots": []}}

    answers = interaction.answered_ahead(asked, responses, ALL_KINDS)

    assert answers is not None
    assert answers["n"] == InputReply(action="accept", content={"name": "Alice"})
    assert answers["r"] == RootsReply((Root("file:///work/a", "A"), Root("file:///b")))
    assert isinstance(answers["m"], ModelReply)
    assert answers.keys() == {"n", "r", "m"}


@pytest.mark.parametrize(
    ("asked", "responses", "kinds"),
    [
        (NAME, {}, ALL_KINDS),
        (NAME, {"other": ACCEPTED}, ALL_KINDS),
        (NAME, {"n": ROOTS}, ALL_KINDS),  # of another kind
        (NAME, {"n": ACCEPTED}, frozenset({"roots"})),  # not declared
        (
            InputRequest("Name?", {"name": {"type": "string"}}, state="s", key="n"),
            {"n": ACCEPTED},
            ALL_KINDS,
        ),
        (InputRound((NAME,), state="round"), {"n": ACCEPTED}, ALL_KINDS),
        (
            InputRound((NAME, RootsRequest(key="r"))),
            {"n": ACCEPTED},
            ALL_KINDS,
        ),  # one key unanswered
        (confirm("Delete?"), {"input": {"action": "accept"}}, ALL_KINDS),
        (
            InputRequest(
                "Delete?",
                {"confirm": {"type": "boolean"}, "reason": {"type": "string"}},
                key="k",
            ),
            {"k": {"action": "accept", "content": {"confirm": True, "reason": "x"}}},
            ALL_KINDS,
        ),  # a form of the engine's own with the confirm box
        (
            UrlRequest("Pay", "https://example.com/p"),
            {"url": {"action": "accept"}},
            ALL_KINDS,
        ),
    ],
    ids=[
        "none",
        "wrong-key",
        "wrong-kind",
        "undeclared",
        "question-state",
        "round-state",
        "partial",
        "confirmation",
        "confirm-box-among-fields",
        "url",
    ],
)
def test_what_is_never_answered_ahead(asked, responses, kinds):
    assert interaction.answered_ahead(asked, responses, kinds) is None
