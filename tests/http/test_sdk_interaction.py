"""The official Python SDK client: progress, logs and a confirmation round trip.

On 2026-07-28 the confirmation is a retry; on the 2025 wires (``legacy``)
the server asks on the call's SSE stream and the client POSTs its answer,
under uvicorn and under gunicorn alike. The TypeScript SDK (v1 on
2025-11-25, v2 in ``auto`` and ``legacy``) confirms through
``clients/confirm.mjs``.

The confirmation's retry goes to a second, separately started server process
on the same database: the sealed ``requestState`` is all it needs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from django.contrib.auth.models import User
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from demo.models import Note
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import Tenant
from tests.live.node import CLIENTS, NODE_BIN, run_node
from tests.live.servers import Server, database_url, running

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = [
    "test.async_ticker",
    "demo.add_note",
    "demo.delete_note",
    "test_input_required_result_multiple_inputs",
    "test_sampling",
]
ACCEPT = types.ElicitResult(action="accept", content={"confirm": True})


@pytest.fixture
def tenant(server: Server) -> Tenant:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, TOOLS)
    return tenant


@pytest.fixture
def alice(tenant: Tenant) -> str:
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


@pytest.fixture
def bob(tenant: Tenant) -> str:
    return tokens.issue(tenant, User.objects.create_user("bob")).secret


@pytest.fixture
def note(tenant: Tenant) -> Note:
    return Note.objects.create(tenant=tenant, title="groceries")


@pytest.fixture(scope="module")
def second_server(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    db_url = database_url(connection.settings_dict)
    with running("uvicorn", db_url, tmp_path_factory.mktemp("second")) as live:
        yield live


async def _elicit(context: Any, params: types.ElicitRequestParams) -> Any:
    return ACCEPT


def client(server: Server, secret: str, mode: str = "auto", **kw: Any) -> Any:
    auth = {"Authorization": f"Bearer {secret}"}
    http = httpx2.AsyncClient(headers=auth, timeout=30)
    transport = streamable_http_client(f"{server.url}/t/acme/mcp", http_client=http)
    return http, Client(transport, mode=mode, **kw)


async def _with_client(
    server: Server, secret: str, work: Any, mode: str = "auto", **kw: Any
) -> Any:
    http, mcp_client = client(server, secret, mode, **kw)
    async with http, mcp_client as session:
        await session.list_tools()
        return await work(session)


def run(server: Server, secret: str, work: Any, mode: str = "auto", **kw: Any) -> Any:
    return asyncio.run(_with_client(server, secret, work, mode, **kw))


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_progress_reaches_the_sdk_client_before_the_result(server, alice, mode):
    seen: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    async def work(session: Any) -> tuple[list[float], Any]:
        result = await session.call_tool(
            "test_async_ticker", {"steps": 3}, progress_callback=progress
        )
        return list(seen), result

    before_result, result = run(server, alice, work, mode)

    assert before_result == [1, 2, 3]
    assert result.structured_content == {"steps": 3}


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_log_lines_reach_the_sdk_client_that_opts_in(server, alice):
    lines: list[tuple[str, Any]] = []

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        lines.append((params.level, params.data))

    async def work(session: Any) -> Any:
        return await session.call_tool("test_async_ticker", {"steps": 2})

    run(server, alice, work, logging_callback=log, log_level="info")

    assert lines == [("info", "tick 1"), ("info", "tick 2")]


ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
"""2026-07-28 answers by a retry; 2025-11-25 on the call's SSE stream."""


def _delete(note: Note) -> Any:
    async def work(session: Any) -> Any:
        result = await session.call_tool("demo_delete_note", {"id": note.pk})
        return session.protocol_version, result

    return work


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"], indirect=True)
@pytest.mark.parametrize(("mode", "era"), ERAS)
def test_the_elicitation_callback_confirms_a_deletion(server, alice, note, mode, era):
    version, result = run(
        server, alice, _delete(note), mode, elicitation_callback=_elicit
    )

    assert version == era
    assert result.structured_content == {"id": note.pk, "deleted": True}
    assert not Note.objects.filter(pk=note.pk).exists()


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"], indirect=True)
@pytest.mark.parametrize(("mode", "era"), ERAS)
def test_a_declined_confirmation_keeps_the_note(server, alice, note, mode, era):
    async def decline(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="decline")

    version, result = run(
        server, alice, _delete(note), mode, elicitation_callback=decline
    )

    assert version == era
    assert result.structured_content == {"id": note.pk, "deleted": False}
    assert Note.objects.filter(pk=note.pk).exists()


async def _ask(session: Any, note: Note) -> types.InputRequiredResult:
    first = await session.session.call_tool(
        "demo_delete_note", {"id": note.pk}, allow_input_required=True
    )
    assert isinstance(first, types.InputRequiredResult)
    return first


def _retry(state: str, note: Note, arguments: dict[str, Any] | None = None) -> Any:
    async def work(session: Any) -> Any:
        try:
            return await session.call_tool(
                "demo_delete_note",
                arguments or {"id": note.pk},
                input_responses={"input": ACCEPT},
                request_state=state,
            )
        except MCPError as refused:
            return refused

    return work


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_the_confirmed_retry_completes_on_another_server_process(
    server, second_server, alice, bob, note
):
    first = run(server, alice, lambda s: _ask(s, note), elicitation_callback=_elicit)
    state = first.request_state
    assert Note.objects.filter(pk=note.pk).exists()
    elicit = first.input_requests["input"]
    assert elicit.params.requested_schema["properties"]["confirm"]["type"] == "boolean"

    forged = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
    for secret, sent in ((alice, forged), (bob, state)):
        refused = run(
            second_server, secret, _retry(sent, note), elicitation_callback=_elicit
        )
        assert isinstance(refused, MCPError)
        assert refused.error.code == types.INVALID_PARAMS
        assert Note.objects.filter(pk=note.pk).exists()

    result = run(
        second_server, alice, _retry(state, note), elicitation_callback=_elicit
    )

    assert result.structured_content == {"id": note.pk, "deleted": True}
    assert not Note.objects.filter(pk=note.pk).exists()


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_a_2025_client_without_an_elicitation_callback_gets_a_tool_error(
    server, alice, note
):
    version, result = run(server, alice, _delete(note), "legacy")

    assert version == "2025-11-25"
    assert result.is_error is True
    assert "INPUT_UNAVAILABLE" in result.content[0].text
    assert Note.objects.filter(pk=note.pk).exists()


TYPESCRIPT = [
    ("v1", "legacy", "2025-11-25"),
    ("v2", "legacy", "2025-11-25"),
    ("v2", "auto", "2026-07-28"),
]


def typescript(
    server: Server, secret: str, note: Note, sdk: str, mode: str, action: str
) -> dict[str, Any]:
    """``clients/confirm.mjs``: the TypeScript SDK's elicitation handler
    answers the confirmation of a ``demo_delete_note`` call."""
    url = f"{server.url}/t/acme/mcp"
    args = [str(NODE_BIN / "node"), "confirm.mjs", sdk, mode, url, secret]
    done = run_node([*args, str(note.pk), action], CLIENTS, timeout=60)
    assert done.returncode == 0, done.stderr
    said: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return said


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"], indirect=True)
@pytest.mark.parametrize(("sdk", "mode", "era"), TYPESCRIPT)
def test_the_typescript_sdk_confirms_a_deletion(server, alice, note, sdk, mode, era):
    said = typescript(server, alice, note, sdk, mode, "accept")

    assert said["version"] == era
    assert len(said["asked"]) == 1
    assert said["result"]["structuredContent"] == {"id": note.pk, "deleted": True}
    assert not Note.objects.filter(pk=note.pk).exists()


@pytest.mark.parametrize("server", ["gunicorn"], indirect=True)
@pytest.mark.parametrize(("sdk", "mode", "era"), TYPESCRIPT)
def test_the_typescript_sdk_declines_a_deletion(server, alice, note, sdk, mode, era):
    said = typescript(server, alice, note, sdk, mode, "decline")

    assert said["version"] == era
    assert said["result"]["structuredContent"] == {"id": note.pk, "deleted": False}
    assert Note.objects.filter(pk=note.pk).exists()


async def _name(context: Any, params: Any) -> Any:
    return types.ElicitResult(action="accept", content={"name": "Alice"})


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
    asked = params.messages[0].content
    assert isinstance(asked, types.TextContent)
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=f"Re: {asked.text}"),
        model="local-model",
        stop_reason="endTurn",
    )


async def _roots(context: Any) -> Any:
    root = types.Root.model_validate({"uri": "file:///srv/a", "name": "A"})
    return types.ListRootsResult(roots=[root])


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"], indirect=True)
@pytest.mark.parametrize(("mode", "era"), ERAS)
def test_the_sdk_callbacks_answer_a_round_of_a_form_the_model_and_the_roots(
    server, alice, mode, era
):
    async def work(session: Any) -> Any:
        result = await session.call_tool(
            "test_input_required_result_multiple_inputs", {}
        )
        return session.protocol_version, result

    version, result = run(
        server,
        alice,
        work,
        mode,
        elicitation_callback=_name,
        sampling_callback=_sample,
        list_roots_callback=_roots,
    )

    assert version == era
    assert result.is_error is not True
    assert result.content[0].text == (
        "Re: Generate a greeting Alice (roots: file:///srv/a; state=multiple)"
    )


@pytest.mark.parametrize("server", ["uvicorn"], indirect=True)
def test_a_2026_client_without_a_sampling_callback_is_refused_with_32021(server, alice):
    async def work(session: Any) -> Any:
        try:
            return await session.call_tool("test_sampling", {"prompt": "Hi"})
        except MCPError as refused:
            return refused

    refused = run(server, alice, work, elicitation_callback=_name)

    assert isinstance(refused, MCPError)
    assert refused.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.error.data == {"requiredCapabilities": {"sampling": {}}}
