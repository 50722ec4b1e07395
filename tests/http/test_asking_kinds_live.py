"""Every kind of engine question on the 2025 wires, asked on the call's SSE stream.

Two servers share one Redis (the cache and the bus): the call runs on the
first (uvicorn, or gunicorn) and every answer is POSTed to the second (uvicorn),
so it crosses workers. The engines ask the caller's model (``sampling/createMessage``),
its roots (``roots/list``), a URL elicitation (2025-11-25 only) and a
round of three, asked one after another.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User
from django.db import connection

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import Tenant
from tests.live.calling import StreamedCall
from tests.live.servers import Server, database_url, running
from tests.services import redis_running

REDIS_DB = 11
SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "Bonjour"},
    "model": "test-model",
    "stopReason": "endTurn",
}
ROOTS = {"roots": [{"uri": "file:///work/a", "name": "A"}]}
ENGINES = [
    "test_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_multiple_inputs",
    "test.consent",
]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_running(), reason="needs Redis on 6379"),
]


@pytest.fixture(scope="module", params=["uvicorn", "gunicorn"])
def pair(
    request: pytest.FixtureRequest,
    django_db_setup: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, Server]]:
    """The waiting server (uvicorn, or gunicorn) and an answering one."""
    url = database_url(connection.settings_dict)
    tmp = tmp_path_factory.mktemp(f"kinds-{request.param}")
    env: dict[str, Any] = {
        "CACHE_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
        "MCP_BUS": "redis",
        "MCP_ENGINE_DEADLINE_SECONDS": "8",
        "MCP_ENGINES": "demo.conformance.ENGINES,tests.engines.PROBES",
    }
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    with (
        running(request.param, url, tmp / "a", **env) as first,
        running("uvicorn", url, tmp / "b", **env) as second,
    ):
        yield first, second


@pytest.fixture
def secret() -> str:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ENGINES)
    return tokens.issue(tenant, User.objects.create_user("alice")).secret


def headers(secret: str, version: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
    }


class Calling(StreamedCall):
    """A ``tools/call`` read as it streams, in a thread."""

    def __init__(
        self,
        server: Server,
        secret: str,
        tool: str,
        version: str,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        body = {
            "jsonrpc": "2.0",
            "id": "call-1",
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments or {}},
        }
        url = f"{server.url}/t/acme/mcp"
        super().__init__(url, body, headers(secret, version))


def answer(
    server: Server, secret: str, version: str, request_id: Any, result: Any
) -> int:
    message = {"jsonrpc": "2.0", "id": request_id, "result": result}
    response = httpx2.post(
        f"{server.url}/t/acme/mcp",
        content=json.dumps(message),
        headers={**headers(secret, version), "Content-Type": "application/json"},
        timeout=20,
    )
    return response.status_code


def text_of(result: dict[str, Any]) -> str:
    assert result.get("isError") is not True, result
    text: str = result["content"][0]["text"]
    return text


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_sampling_goes_out_as_create_message_and_its_answer_reaches_the_engine(
    pair, secret, version
):
    first, second = pair
    call = Calling(first, secret, "test_sampling", version, {"prompt": "Say hi"})
    question = call.question()

    assert question["method"] == "sampling/createMessage"
    assert question["params"] == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
        "maxTokens": 100,
    }
    assert answer(second, secret, version, question["id"], SAMPLED) == 202
    assert text_of(call.result()) == "LLM response: Bonjour"


def test_roots_go_out_as_roots_list(pair, secret):
    first, second = pair
    version = "2025-06-18"
    call = Calling(first, secret, "test_input_required_result_list_roots", version)
    question = call.question()

    assert question["method"] == "roots/list"
    assert answer(second, secret, version, question["id"], ROOTS) == 202
    assert text_of(call.result()) == "Roots: file:///work/a"


def test_a_round_is_asked_one_question_after_another(pair, secret):
    first, second = pair
    version = "2025-11-25"
    tool = "test_input_required_result_multiple_inputs"
    call = Calling(first, secret, tool, version)
    answers = {
        "elicitation/create": {"action": "accept", "content": {"name": "Alice"}},
        "sampling/createMessage": SAMPLED,
        "roots/list": ROOTS,
    }
    methods = []
    for _ in range(3):
        question = call.question()
        methods.append(question["method"])
        result = answers[question["method"]]
        assert answer(second, secret, version, question["id"], result) == 202

    assert methods == ["elicitation/create", "sampling/createMessage", "roots/list"]
    assert text_of(call.result()) == (
        "Bonjour Alice (roots: file:///work/a; state=multiple)"
    )


def test_a_url_question_is_url_mode_elicitation_on_2025_11_25(pair, secret):
    first, second = pair
    version = "2025-11-25"
    call = Calling(first, secret, "test_consent", version)
    question = call.question()

    assert question["method"] == "elicitation/create"
    params = question["params"]
    assert params["mode"] == "url"
    assert params["url"] == "https://example.com/consent"
    assert isinstance(params["elicitationId"], str)
    assert answer(second, secret, version, question["id"], {"action": "accept"}) == 202
    assert call.result()["structuredContent"] == {"action": "accept", "state": ""}


def test_a_url_question_on_2025_06_18_is_unavailable_without_asking(pair, secret):
    call = Calling(pair[0], secret, "test_consent", "2025-06-18")
    result = call.result()

    assert result["isError"] is True
    assert "INPUT_UNAVAILABLE" in result["content"][0]["text"]
    assert call.questions.empty()


def test_an_answer_of_the_wrong_kind_is_no_answer(pair, secret):
    first, second = pair
    version = "2025-11-25"
    call = Calling(first, secret, "test_sampling", version, {"prompt": "Hi"})
    question = call.question()

    assert answer(second, secret, version, question["id"], ROOTS) == 202
    result = call.result()
    assert result["isError"] is True
    assert "INPUT_UNAVAILABLE" in result["content"][0]["text"]
