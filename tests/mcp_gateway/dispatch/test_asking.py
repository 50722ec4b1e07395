"""Questions to a 2025 client, in one process: issue, relay, checks, bounds.

The in-process bus carries the answer as Redis or PostgreSQL would across
processes (the live tests, ``tests/http/test_asking_live.py``, do that).
"""

from __future__ import annotations

import asyncio
import gc
import secrets
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache

from engines_app.context import Principal, Signal
from engines_app.interaction import InputReply, confirm
from mcp_gateway import bus
from mcp_gateway.dispatch import asking

pytestmark = pytest.mark.django_db(transaction=True)

ALICE = Principal(tenant="acme", tenant_id=1, user="alice", token="aaaa1111")
BOB = Principal(tenant="acme", tenant_id=1, user="bob", token="bbbb2222")
ALICE_ELSEWHERE = Principal(tenant="other", tenant_id=2, user="alice", token="cccc")
ALICE_OTHER_TOKEN = Principal(tenant="acme", tenant_id=1, user="alice", token="dddd")
ACCEPT = {"action": "accept", "content": {"confirm": True}}


@pytest.fixture(autouse=True)
def _local_bus(local_bus: None) -> None:
    """Every test here on the in-process bus."""


def answer(request_id: str, result: Any = ACCEPT, principal=ALICE) -> bool:
    response = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return asking.relay(principal.tenant_id, principal, response)


def error(request_id: str) -> bool:
    response = {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": -32601, "message": "Method not found"},
    }
    return asking.relay(1, ALICE, response)


def ask(
    answering: Callable[[dict[str, Any]], object],
    seconds: float = 60.0,
    signal: Signal | None = None,
) -> tuple[InputReply | None, Signal, dict[str, Any]]:
    """Ask Alice to confirm; ``answering(question)`` runs in a thread once
    the question is on the stream. The reply, the call's signal, the question."""

    async def main() -> tuple[InputReply | None, Signal, dict[str, Any]]:
        questions: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        call = signal or Signal(time.monotonic() + seconds)
        asker = asking.Asker(1, ALICE, questions.put_nowait)
        waiting = asyncio.ensure_future(asker.ask(confirm("Delete?", "s1"), call))
        question = await questions.get()
        await asyncio.to_thread(answering, question)
        reply = await waiting
        assert reply is None or isinstance(reply, InputReply)
        return reply, call, question

    return asyncio.run(main())


def test_the_question_waits_for_a_starting_bus_to_listen():
    reply, _, _ = ask(lambda q: answer(q["id"]), seconds=10)  # the bus starts now

    assert reply is not None
    assert bus.stats().listening


def test_the_question_is_an_elicitation_with_a_server_issued_id():
    _, _, question = ask(lambda q: answer(q["id"]))

    assert question["method"] == "elicitation/create"
    assert asking.is_question_id(question["id"])
    assert question["params"]["message"] == "Delete?"
    schema = question["params"]["requestedSchema"]
    assert schema["required"] == ["confirm"]
    assert schema["properties"]["confirm"]["type"] == "boolean"


def test_an_accepted_answer_becomes_the_engines_reply():
    relayed: list[bool] = []

    reply, _, _ = ask(lambda q: relayed.append(answer(q["id"])))

    assert relayed == [True]
    assert reply == InputReply("accept", {"confirm": True}, state="s1")
    assert reply.confirmed
    assert asking.waiting_count() == 0


def test_a_declined_answer_is_a_reply_that_does_not_confirm():
    reply, _, _ = ask(lambda q: answer(q["id"], {"action": "decline"}))

    assert reply == InputReply("decline", {}, state="s1")


@pytest.mark.parametrize(
    "result", [None, {"action": "maybe"}, {"content": {}}, "accept", [ACCEPT]]
)
def test_an_error_or_malformed_answer_is_input_unavailable_at_once(result):
    def answering(question):
        if result is None:
            assert error(question["id"])
        else:
            assert answer(question["id"], result)

    reply, signal, _ = ask(answering)

    assert reply is None
    assert not signal.cancelled  # it did not wait for the deadline


def test_forged_answers_are_refused_and_never_reach_the_engine():
    relayed: list[bool] = []

    def answering(question):
        qid = question["id"]
        relayed.append(answer(qid, principal=BOB))
        relayed.append(answer(qid, principal=ALICE_ELSEWHERE))
        relayed.append(answer(qid, principal=ALICE_OTHER_TOKEN))
        relayed.append(answer(qid[:-1] + ("A" if qid[-1] != "A" else "B")))
        relayed.append(answer("call-1"))
        # Straight onto the bus, as whoever reads Redis could: another identity.
        forged = {"kind": asking.KIND, "id": qid, "result": ACCEPT}
        bus.send(bus.process_id(), {**forged, "identity": [1, "bob", "bbbb2222"]})
        bus.send(bus.process_id(), {**forged, "identity": None})

    reply, signal, _ = ask(answering, seconds=1.0)

    assert relayed == [False] * 5
    assert reply is None  # nothing answered it: unavailable at the deadline
    assert signal.cancelled
    assert asking.waiting_count() == 0


def test_a_replayed_answer_is_refused():
    relayed: list[bool] = []

    def answering(question):
        relayed.append(answer(question["id"], {"action": "decline"}))
        relayed.append(answer(question["id"]))

    reply, _, question = ask(answering)

    assert relayed == [True, False]
    assert reply == InputReply("decline", {}, state="s1")
    assert answer(question["id"]) is False


def test_an_answer_after_the_deadline_is_refused():
    reply, _, question = ask(lambda q: None, seconds=0.5)

    assert reply is None
    assert answer(question["id"]) is False
    assert cache.get(asking.CACHE_PREFIX + question["id"]) is None


def test_a_call_past_its_deadline_asks_nothing():
    sent: list[dict[str, Any]] = []
    asker = asking.Asker(1, ALICE, sent.append)

    reply = asyncio.run(asker.ask(confirm("Delete?"), Signal(time.monotonic() - 1)))

    assert reply is None
    assert sent == []


def test_a_cancelled_call_stops_waiting():
    signal = Signal(time.monotonic() + 60)

    reply, _, _ = ask(lambda q: signal.cancel(), signal=signal)

    assert reply is None
    assert asking.waiting_count() == 0


def test_a_flood_of_answers_for_random_ids_keeps_no_memory():
    def flood(n: int) -> list[bool]:
        return [
            answer(asking.ID_PREFIX + secrets.token_urlsafe(24))
            or answer(secrets.token_urlsafe(8))
            for _ in range(n)
        ]

    flood(200)  # warm
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    relayed = flood(5000)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()

    growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert not any(relayed)
    assert growth < 64 * 1024, growth
    assert asking.waiting_count() == 0
