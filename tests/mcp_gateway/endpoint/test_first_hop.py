"""Under ASGI, what needs no waiting is answered in the request's first hop.

The hop that admits a request also runs a sync engine declared
``blocking = False`` and writes its audit row, or gives a kept
``tools/list`` answer; under the fast path the response is finished there
too (its middleware hooks, ``close()``: ``request_finished``). Whatever
waits (an engine in the pool, the SDK's answers, a question on a 2025
stream, notifications to stream) is left to the loop, as before.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from django.core import signals
from django.core.handlers.asgi import ASGIHandler
from django.db import DatabaseError

from engines_app.context import EngineContext
from engines_app.engine import Engine
from engines_app.interaction import confirm
from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, jsonrpc
from mcp_gateway.asgi import BoundaryGuard
from mcp_gateway.audit import log as audit_log
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.endpoint import aviews
from tests.mcp_gateway.endpoint.servers import asgi_request, asgi_scope, until_idle

pytestmark = pytest.mark.django_db(transaction=True)  # requests use their threads

ACCEPT = {"action": "accept", "content": {"confirm": True}}


class _Plain(Engine):
    """No input; never waits unless it says otherwise."""

    input_schema = {"type": "object", "properties": {}, "additionalProperties": False}
    blocking = False


class Reporting(_Plain):
    """Never waits, but reports progress and a log line."""

    id = "test.reporting"
    name = "Reporting"
    description = "Report progress, then answer."

    def execute(self, context: EngineContext) -> dict[str, Any]:
        context.report_progress(1, 2, "half way")
        context.log("info", "done soon")
        return {"done": True}


class Asking(_Plain):
    """Never waits, but asks for a confirmation first."""

    id = "test.asking"
    name = "Asking"
    description = "Ask, then answer."

    def execute(self, context: EngineContext) -> Any:
        if context.reply is None:
            return confirm("Go on?", "s1")
        return {"action": context.reply.action}


class Waiting(_Plain):
    """Declared ``blocking = False``, held until the test lets it go."""

    id = "test.held"
    name = "Held"
    description = "Wait for the test."
    running = threading.Event()
    release = threading.Event()

    def execute(self, context: EngineContext) -> dict[str, Any]:
        self.running.set()
        self.release.wait(10)
        return {"held": True}


class Pooled(_Plain):
    """A sync engine that may wait: it runs in the engine pool."""

    id = "test.pooled"
    name = "Pooled"
    description = "Answer from the pool."
    blocking = True

    def execute(self, context: EngineContext) -> dict[str, Any]:
        return {"pooled": True}


ENGINES = (Reporting(), Asking(), Waiting(), Pooled())


@pytest.fixture(autouse=True)
def _exposed(tenant: Any, local_bus: None) -> Iterator[None]:
    for engine in ENGINES:
        default_registry.register(engine)
    bookkeeping.expose_many(tenant, ["demo.echo", *(e.id for e in ENGINES)])
    yield
    for engine in ENGINES:
        default_registry.unregister(engine.id)


def _call(tool: str, request_id: Any = 1, **params: Any) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, **params},
    }
    return json.dumps(message).encode()


ECHO = _call("demo_echo", arguments={"text": "hi"})
LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()


@pytest.fixture
def finished() -> Iterator[list[int]]:
    """The threads ``request_finished`` was sent in."""
    seen: list[int] = []

    def receiver(**kwargs: Any) -> None:
        seen.append(threading.get_ident())

    signals.request_finished.connect(receiver)
    yield seen
    signals.request_finished.disconnect(receiver)


def post(token: str, *bodies: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """POST each body in turn through one guard around Django's handler."""
    guard = BoundaryGuard(ASGIHandler())

    async def main() -> list[tuple[int, dict[str, str], bytes]]:
        answers = []
        for body in bodies:
            status, headers, content = await asgi_request(
                guard, asgi_scope(token, body=body), body
            )
            answers.append((status, dict(headers), content))
        return answers

    return asyncio.run(main())


def sse(content: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data: ") :])
        for line in content.decode().splitlines()
        if line.startswith("data: ")
    ]


def test_a_call_of_an_engine_that_never_waits_hops_once(token, hops, finished):
    """Admission, the engine, the audit row and the response's end, in one
    hop to the request's thread (it was three)."""
    [(status, headers, content)] = post(token, ECHO)

    assert status == 200
    assert json.loads(content)["result"]["structuredContent"] == {"text": "hi"}
    assert hops.count("mcp-request") == 1
    assert headers["X-Frame-Options"] == "DENY"  # the response hooks ran
    assert headers["Content-Length"] == str(len(content))
    assert len(finished) == 1
    assert finished[0] != threading.get_ident()  # in the request's thread
    assert list(ToolCall.objects.values_list("tool_name", "outcome")) == [
        ("demo_echo", "ok")
    ]


def test_a_kept_tools_list_answer_hops_once(token, hops, finished):
    """The first list is the SDK's answer, on the loop; the next is kept."""
    first, second = post(token, LIST, LIST)

    assert first[0] == second[0] == 200
    assert json.loads(first[2]) == json.loads(second[2])
    assert hops.count("mcp-request") == 3  # 2, then 1
    assert len(finished) == 2


def test_an_engine_that_may_wait_runs_on_the_loop_with_its_hops(token, hops, finished):
    """In the pool, awaited: the audit row and the end in hops of their own."""
    [(status, _, content)] = post(token, _call("test_pooled"))

    assert status == 200
    assert json.loads(content)["result"]["structuredContent"] == {"pooled": True}
    assert hops.count("mcp-request") == 3
    assert "mcp-engine" in hops
    assert len(finished) == 1
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok"]


def test_notifications_of_an_engine_that_never_waits_are_streamed(token, finished):
    """Reported in the first hop, sent on the loop: the stream, then its end."""
    body = _call("test_reporting", _meta={"progressToken": "p1"})
    [(status, headers, content)] = post(token, body)

    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    messages = sse(content)
    assert [m.get("method") for m in messages] == [
        "notifications/progress",
        "notifications/message",
        None,
    ]
    assert messages[0]["params"]["progressToken"] == "p1"
    assert messages[2]["result"]["structuredContent"] == {"done": True}
    assert len(finished) == 1
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok"]


def test_without_a_progress_token_the_log_line_is_still_streamed(token):
    """No progress without a token, but the 2025 wires take info lines."""
    [(_, headers, content)] = post(token, _call("test_reporting"))

    assert headers["Content-Type"] == "text/event-stream"
    assert [m.get("method") for m in sse(content)] == ["notifications/message", None]


def test_a_question_of_an_engine_that_never_waits_is_asked_on_the_stream(
    token, finished
):
    """The first run's question goes to the loop, asked on the call's stream;
    the answer runs the engine on there."""
    guard = BoundaryGuard(ASGIHandler())
    body = _call("test_asking", request_id="call-1")

    async def main() -> tuple[list[dict[str, Any]], int]:
        loop = asyncio.get_running_loop()
        messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        gone = loop.create_future()
        fed = False

        async def receive() -> dict[str, Any]:
            nonlocal fed
            if not fed:
                fed = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone
            return {"type": "http.disconnect"}  # pragma: no cover

        async def send(message: Mapping[str, Any]) -> None:
            if message["type"] == "http.response.body":
                for each in sse(message.get("body", b"")):
                    await messages.put(each)

        calling = asyncio.ensure_future(
            guard(asgi_scope(token, body=body), receive, send)
        )
        question = await asyncio.wait_for(messages.get(), 10)
        reply = json.dumps(
            {"jsonrpc": "2.0", "id": question["id"], "result": ACCEPT}
        ).encode()
        replied, _, _ = await asgi_request(guard, asgi_scope(token, body=reply), reply)
        result = await asyncio.wait_for(messages.get(), 10)
        await calling
        gone.cancel()
        return [question, result], replied

    (question, result), replied = asyncio.run(main())

    assert question["method"] == "elicitation/create"
    assert replied == 202
    assert result["id"] == "call-1"
    assert result["result"]["structuredContent"] == {"action": "accept"}
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok"]
    assert len(finished) == 2  # the call's, the reply's


def test_a_client_leaving_while_its_one_hop_answer_runs_ends_it_once(
    token, finished, monkeypatch
):
    """Cancelled while the hop runs: the hop finishes the call (its audit row)
    and its response (``request_finished``, once); nothing is sent."""
    Waiting.running.clear()
    Waiting.release.clear()
    finished_when_cancelled: list[int] = []
    abandoned = aviews._abandoned

    async def cancelled(hop: Any) -> None:  # the view, cancelled mid-hop
        finished_when_cancelled.append(len(finished))
        Waiting.release.set()
        await abandoned(hop)

    monkeypatch.setattr(aviews, "_abandoned", cancelled)
    try:
        sent = _leave_while(token, _call("test_held"), Waiting.running)
    finally:
        Waiting.release.set()

    assert finished_when_cancelled == [0]
    assert len(finished) == 1
    assert sent == []
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok"]


def _leave_while(token: str, body: bytes, running: threading.Event) -> list[Any]:
    """POST ``body``; the client leaves once ``running`` is set. What was sent."""
    guard = BoundaryGuard(ASGIHandler())
    sent: list[Any] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        fed = False

        async def receive() -> dict[str, Any]:
            nonlocal fed
            if not fed:
                fed = True
                return {"type": "http.request", "body": body, "more_body": False}
            await loop.run_in_executor(None, running.wait, 10)
            return {"type": "http.disconnect"}

        async def send(message: Mapping[str, Any]) -> None:
            sent.append(message)  # pragma: no cover - the client left

        await guard(asgi_scope(token, body=body), receive, send)
        await until_idle(guard.threads, 1)

    asyncio.run(main())
    return sent


def test_a_call_left_to_the_loop_whose_client_leaves_during_the_hop_is_recorded(
    token, finished, monkeypatch
):
    """Admitted in the hop (its record begun, its quota unit taken) and left
    to the loop, which the client's leaving cancels: recorded cancelled."""
    handed, release = threading.Event(), threading.Event()
    answer_here = aviews.answer_here  # type: ignore[attr-defined]

    def held(*args: Any) -> Any:
        answer = answer_here(*args)
        handed.set()
        release.wait(10)
        return answer

    abandoned = aviews._abandoned

    async def cancelled(hop: Any) -> None:  # the view, cancelled mid-hop
        release.set()
        await abandoned(hop)

    monkeypatch.setattr(aviews, "answer_here", held)
    monkeypatch.setattr(aviews, "_abandoned", cancelled)
    try:
        sent = _leave_while(token, _call("test_pooled"), handed)
    finally:
        release.set()

    assert sent == []
    assert list(ToolCall.objects.values_list("tool_name", "outcome")) == [
        ("test_pooled", "cancelled")
    ]
    assert len(finished) == 1


def test_an_error_closing_a_response_finished_in_the_hop_comes_after_the_answer(
    token,
):
    """A ``request_finished`` receiver's error: the answer is sent as it
    was made, once, and the error raised after it, as Django's handler does."""
    closed: list[int] = []

    def failing(**kwargs: Any) -> None:
        closed.append(1)
        raise RuntimeError("a receiver's own error")

    guard = BoundaryGuard(ASGIHandler())
    sent: list[Mapping[str, Any]] = []

    async def main() -> None:
        fed = False
        never = asyncio.get_running_loop().create_future()

        async def receive() -> dict[str, Any]:
            nonlocal fed
            if not fed:
                fed = True
                return {"type": "http.request", "body": ECHO, "more_body": False}
            await never
            return {"type": "http.disconnect"}  # pragma: no cover

        async def send(message: Mapping[str, Any]) -> None:
            sent.append(message)

        try:
            await guard(asgi_scope(token, body=ECHO), receive, send)
        finally:
            never.cancel()

    signals.request_finished.connect(failing)
    try:
        with pytest.raises(RuntimeError, match="a receiver's own error"):
            asyncio.run(main())
    finally:
        signals.request_finished.disconnect(failing)
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [200]
    body = b"".join(
        m.get("body", b"") for m in sent if m["type"] != "http.response.start"
    )
    assert json.loads(body)["result"]["structuredContent"] == {"text": "hi"}
    assert closed == [1]
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok"]


def test_a_second_cancel_while_the_left_call_is_recorded_loses_nothing(
    token, finished, monkeypatch
):
    """A server's own cancel (at shutdown) on top of the client's leaving,
    while the view waits for its hop: the call is still recorded."""
    handed, release = threading.Event(), threading.Event()
    answer_here = aviews.answer_here  # type: ignore[attr-defined]
    abandoned = aviews._abandoned

    def held(*args: Any) -> Any:
        answer = answer_here(*args)
        handed.set()
        release.wait(10)
        return answer

    async def cancelled_again(hop: Any) -> None:
        [view] = [
            task
            for task in asyncio.all_tasks()
            if "process_request" in getattr(task.get_coro(), "__qualname__", "")
        ]
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, view.cancel)  # the server's own cancel
        loop.call_later(0.1, release.set)
        await abandoned(hop)

    monkeypatch.setattr(aviews, "answer_here", held)
    monkeypatch.setattr(aviews, "_abandoned", cancelled_again)
    try:
        _leave_while(token, _call("test_pooled"), handed)
    finally:
        release.set()

    assert list(ToolCall.objects.values_list("tool_name", "outcome")) == [
        ("test_pooled", "cancelled")
    ]
    assert len(finished) == 1


def test_a_database_error_after_notifications_ends_their_stream(token, monkeypatch):
    """Committed to a stream by the progress already queued: the error is
    the stream's last event, as on the loop."""

    def unavailable(*args: Any) -> None:
        raise DatabaseError("the database went away")

    monkeypatch.setattr(audit_log, "record_call", unavailable)
    body = _call("test_reporting", _meta={"progressToken": "p1"})
    [(status, headers, content)] = post(token, body)

    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    messages = sse(content)
    assert [m.get("method") for m in messages[:2]] == [
        "notifications/progress",
        "notifications/message",
    ]
    assert messages[2]["error"]["code"] == jsonrpc.SERVER_ERROR
    assert b"went away" not in content
