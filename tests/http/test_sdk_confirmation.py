"""The official Python SDK client against a tool staff marked "requires
confirmation": the gateway's own question on 2026-07-28; on 2025-11-25 the
question on the call's SSE stream, under uvicorn and gunicorn (a client
that takes no event stream is refused: ``tests/mcp_gateway/endpoint/
test_asking_wsgi.py``)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from django.contrib.auth.models import User
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.request_state import AESGCMRequestStateCodec
from mcp.shared.exceptions import MCPError

from demo.models import Note
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.dispatch.request_state import derived_keys
from mcp_gateway.models import Exposure, Tenant
from tests.live.servers import Server, database_url, running

pytestmark = pytest.mark.django_db(transaction=True)

ARGS = {"title": "groceries"}
ACCEPT = types.ElicitResult(action="accept", content={"confirm": True})
SHORT_TTL = "0.001"
"""The TTL of the server that mints states already spent (seconds)."""


@pytest.fixture
def tenant(server: Server) -> Tenant:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.add_note", "demo.echo"])
    exposure = Exposure.objects.get(tenant=tenant, engine_id="demo.add_note")
    bookkeeping.require_confirmation(exposure, True)
    return tenant


@pytest.fixture
def alice(tenant: Tenant) -> str:
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


@pytest.fixture
def bob(tenant: Tenant) -> str:
    return tokens.issue(tenant, User.objects.create_user("bob")).secret


@pytest.fixture(scope="module")
def short_lived(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A server whose requestStates expire a millisecond after minting."""
    db_url = database_url(connection.settings_dict)
    tmp = tmp_path_factory.mktemp("short")
    with running(
        "uvicorn", db_url, tmp, MCP_REQUEST_STATE_TTL_SECONDS=SHORT_TTL
    ) as live:
        yield live


def run(server: Server, secret: str, work: Any, mode: str = "auto", **kw: Any) -> Any:
    async def session_work() -> Any:
        auth = {"Authorization": f"Bearer {secret}"}
        http = httpx2.AsyncClient(headers=auth, timeout=30)
        url = f"{server.url}/t/acme/mcp"
        transport = streamable_http_client(url, http_client=http)
        async with http, Client(transport, mode=mode, **kw) as session:
            await session.list_tools()
            return await work(session)

    return asyncio.run(session_work())


def answering(result: types.ElicitResult, seen: list[str] | None = None) -> Any:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> Any:
        if seen is not None:
            seen.append(params.message)
        return result

    return elicit


def add_note(arguments: dict[str, Any] | None = None) -> Any:
    async def work(session: Any) -> Any:
        return await session.call_tool("demo_add_note", arguments or ARGS)

    return work


async def ask(session: Any) -> types.InputRequiredResult:
    first = await session.session.call_tool(
        "demo_add_note", ARGS, allow_input_required=True
    )
    assert isinstance(first, types.InputRequiredResult)
    return first


def retry(state: str, tool: str = "demo_add_note", arguments: Any = None) -> Any:
    async def work(session: Any) -> Any:
        try:
            return await session.call_tool(
                tool,
                ARGS if arguments is None else arguments,
                input_responses={"confirm": ACCEPT},
                request_state=state,
            )
        except MCPError as refused:
            return refused

    return work


def notes() -> list[str]:
    return list(Note.objects.values_list("title", flat=True))


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"], indirect=True)
def test_the_confirmation_callback_shows_the_arguments_and_the_engine_runs(
    server, alice
):
    seen: list[str] = []

    result = run(
        server, alice, add_note(), elicitation_callback=answering(ACCEPT, seen)
    )

    assert result.is_error is False
    assert result.structured_content["title"] == "groceries"
    assert notes() == ["groceries"]
    assert len(seen) == 1
    assert json.dumps(ARGS, indent=2) in seen[0]
    assert "demo_add_note" in seen[0]


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_declined_confirmation_runs_nothing(server, alice, action):
    declined = types.ElicitResult(action=action)

    result = run(server, alice, add_note(), elicitation_callback=answering(declined))

    assert result.is_error is True
    assert json.loads(result.content[0].text)["code"] == "DECLINED"
    assert notes() == []


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_a_confirmation_is_refused_for_other_arguments_tool_or_user(server, alice, bob):
    elicit = answering(ACCEPT)
    state = run(server, alice, ask, elicitation_callback=elicit).request_state

    replays = [
        (alice, retry(state, arguments={"title": "other"})),
        (alice, retry(state, "demo_echo", {"text": "hi"})),
        (bob, retry(state)),
    ]
    for secret, work in replays:
        refused = run(server, secret, work, elicitation_callback=elicit)
        assert isinstance(refused, MCPError)
        assert refused.error.code == types.INVALID_PARAMS
    assert notes() == []

    done = run(server, alice, retry(state), elicitation_callback=elicit)

    assert done.structured_content["title"] == "groceries"
    assert notes() == ["groceries"]


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_an_expired_confirmation_is_refused_and_audited(server, short_lived, alice):
    elicit = answering(ACCEPT)
    state = run(short_lived, alice, ask, elicitation_callback=elicit).request_state
    _wait_until_expired(state)

    refused = run(short_lived, alice, retry(state), elicitation_callback=elicit)

    assert isinstance(refused, MCPError)
    assert refused.error.code == types.INVALID_PARAMS
    assert notes() == []
    outcomes = ToolCall.objects.order_by("pk").values_list("outcome", flat=True)
    assert list(outcomes) == ["awaiting", "expired"]


def _wait_until_expired(state: str) -> None:
    """Read the sealed expiry (the tests share the server's SECRET_KEY) and
    let it pass: a millisecond at most."""
    claims = json.loads(AESGCMRequestStateCodec(derived_keys()).unseal(state))
    while time.time() <= claims["exp"]:
        time.sleep(claims["exp"] - time.time() + 0.001)


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"], indirect=True)
def test_on_2025_11_25_the_gateway_asks_on_the_calls_stream(server, alice):
    """The call is answered as SSE (under gunicorn once there is a question):
    the confirmation goes out on it and the client's callback answers by
    POST (dispatch.asking)."""
    seen: list[str] = []

    result = run(
        server,
        alice,
        add_note(),
        "legacy",
        elicitation_callback=answering(ACCEPT, seen),
    )

    assert result.is_error is False
    assert notes() == ["groceries"]
    assert len(seen) == 1
    assert json.dumps(ARGS, indent=2) in seen[0]
    outcomes = ToolCall.objects.order_by("id").values_list("outcome", flat=True)
    assert list(outcomes) == ["confirmed", "ok"]


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
@pytest.mark.parametrize("callback", ["decline", "none"])
def test_on_2025_11_25_a_declined_or_unanswerable_question_runs_nothing(
    server, alice, callback
):
    """A decline, or a client without an elicitation callback (its SDK
    answers the question with an error), is no confirmation."""
    kwargs: dict[str, Any] = {}
    if callback == "decline":
        kwargs["elicitation_callback"] = answering(types.ElicitResult(action="decline"))

    result = run(server, alice, add_note(), "legacy", **kwargs)

    assert result.is_error is True
    assert json.loads(result.content[0].text)["code"] == "DECLINED"
    assert notes() == []
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["declined"]
