"""The ASGI fast path: what only it does (the request's hops to its thread,
``request_started`` in the first of them, a client leaving mid-request).
What both servers' fast paths keep of the chain is tested in
test_mount_fast_paths.py."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core import signals
from django.core.handlers.asgi import ASGIHandler

from mcp_gateway.asgi import BoundaryGuard
from mcp_gateway.endpoint import aviews, threads
from tests.mcp_gateway.endpoint.servers import (
    BODY,
    asgi_post,
    asgi_request,
    asgi_scope,
    asgi_taken,
    until_idle,
)

pytestmark = pytest.mark.django_db(transaction=True)  # requests use their threads


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the fast path served."""
    return asgi_taken(monkeypatch)


def test_request_started_is_sent_in_the_first_hop_before_admission(
    token: str, taken: list[str], monkeypatch: pytest.MonkeyPatch
):
    """Not in a hop of its own before the view: in the admission's, the
    request's first hop to its thread."""
    seen: list[tuple[str, int, int]] = []
    hop = threading.local()
    hops: list[int] = []
    submit = ThreadPoolExecutor.submit
    admit = aviews.admit  # type: ignore[attr-defined]

    def numbered(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        if self._thread_name_prefix != "mcp-request":
            return submit(self, fn, *args, **kwargs)
        number = len(hops)
        hops.append(number)

        def run(*args: Any, **kwargs: Any) -> Any:
            hop.number = number
            return fn(*args, **kwargs)

        return submit(self, run, *args, **kwargs)

    def started(**kwargs: Any) -> None:
        seen.append(("started", hop.number, threading.get_ident()))

    def admitting(*args: Any) -> Any:
        seen.append(("admit", hop.number, threading.get_ident()))
        return admit(*args)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", numbered)
    monkeypatch.setattr(aviews, "admit", admitting)
    signals.request_started.connect(started)
    try:
        status, _, _ = asgi_post(token)
    finally:
        signals.request_started.disconnect(started)

    assert taken == ["/t/acme/mcp"]
    assert status == 200
    assert [(what, number) for what, number, _ in seen] == [
        ("started", 0),
        ("admit", 0),
    ]
    assert seen[0][2] == seen[1][2] != threading.get_ident()


def test_a_request_hops_to_its_thread_twice(
    token: str, taken: list[str], monkeypatch: pytest.MonkeyPatch
):
    """The admission, then the response's close (``request_finished``):
    ``request_started`` rides on the first, giving the thread back on none."""
    hops: list[str] = []
    submit = ThreadPoolExecutor.submit

    def counted(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(self._thread_name_prefix)
        return submit(self, fn, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", counted)

    status, _, _ = asgi_post(token)

    assert taken == ["/t/acme/mcp"]
    assert status == 200
    assert hops.count("mcp-request") == 2


def test_a_post_whose_client_leaves_during_admission_sends_each_signal_once(
    token: str, taken: list[str], monkeypatch: pytest.MonkeyPatch
):
    """The view is cancelled while its admission runs in the request's
    thread: ``request_finished`` waits for the admission there, and the
    thread goes back only once both are done."""
    admitting, release = threading.Event(), threading.Event()
    cancelled = threading.Event()
    seen: list[tuple[str, int]] = []
    admit = aviews.admit  # type: ignore[attr-defined]
    abandoned = aviews._abandoned

    async def on_cancel(hop: Any) -> None:  # the view, cancelled mid-hop
        cancelled.set()
        await abandoned(hop)

    def blocking(*args: Any) -> Any:
        admitting.set()
        release.wait(10)
        try:
            return admit(*args)
        finally:
            seen.append(("admitted", threading.get_ident()))

    def started(**kwargs: Any) -> None:
        seen.append(("started", threading.get_ident()))

    def finished(**kwargs: Any) -> None:
        seen.append(("finished", threading.get_ident()))

    guard = BoundaryGuard(ASGIHandler())
    sent: list[Mapping[str, Any]] = []

    async def leave_during_admission() -> tuple[list[str], int]:
        loop = asyncio.get_running_loop()
        body = {"type": "http.request", "body": BODY, "more_body": False}
        messages = iter([body])

        async def receive() -> Mapping[str, Any]:
            if (message := next(messages, None)) is not None:
                return message
            await loop.run_in_executor(None, admitting.wait, 10)
            return {"type": "http.disconnect"}

        async def send(message: Mapping[str, Any]) -> None:
            sent.append(message)  # pragma: no cover - the client left

        serving = asyncio.ensure_future(guard(asgi_scope(token), receive, send))
        await loop.run_in_executor(None, admitting.wait, 10)
        await loop.run_in_executor(None, cancelled.wait, 10)
        while_busy = ([what for what, _ in seen], guard.threads.idle)
        release.set()
        await serving
        await until_idle(guard.threads, 1)
        return while_busy

    monkeypatch.setattr(aviews, "admit", blocking)
    monkeypatch.setattr(aviews, "_abandoned", on_cancel)
    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        seen_while_busy, idle_while_busy = asyncio.run(leave_during_admission())
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)

    assert taken == ["/t/acme/mcp"]
    assert seen_while_busy == ["started"]
    assert idle_while_busy == 0
    assert [what for what, _ in seen] == ["started", "admitted", "finished"]
    assert len({thread for _, thread in seen}) == 1
    assert sent == []


def test_a_request_leaves_nothing_owed_to_the_next_in_its_context(
    token: str, taken: list[str]
):
    """A server may serve a connection's requests one after the other in
    one task: a later request there must not see the ``request_started`` an
    earlier one owed (nor keep that request's scope alive)."""
    guard = BoundaryGuard(ASGIHandler())

    async def one_after_the_other() -> list[tuple[int, object]]:
        answers: list[tuple[int, object]] = []
        for _ in range(2):
            status, _, _ = await asgi_request(guard, asgi_scope(token))
            answers.append((status, threads._owed.get()))
        return answers

    answers = asyncio.run(one_after_the_other())

    assert taken == ["/t/acme/mcp", "/t/acme/mcp"]
    assert answers == [(200, None), (200, None)]
