"""Request threads under ASGI: one per request at a time, kept between them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from mcp_gateway.asgi import BoundaryGuard
from mcp_gateway.endpoint.threads import RequestThreads
from tests.mcp_gateway.endpoint.servers import until_idle


async def _thread() -> int:
    return await sync_to_async(threading.get_ident)()


def test_a_request_runs_its_hops_in_one_thread_and_the_next_reuses_it():
    threads = RequestThreads()

    async def two_requests() -> list[list[int]]:
        seen = []
        for _ in range(2):
            async with threads.request():
                seen.append([await _thread(), await _thread()])
            await until_idle(threads, 1)
        return seen

    first, second = asyncio.run(two_requests())

    assert first[0] == first[1]
    assert second == first
    assert first[0] != threading.get_ident()


def test_requests_at_the_same_time_get_threads_of_their_own():
    threads = RequestThreads()

    async def both() -> tuple[int, int]:
        inside = asyncio.Barrier(2)

        async def one() -> int:
            async with threads.request():
                ident = await _thread()
                await inside.wait()  # both requests open at once
                assert await _thread() == ident
                return ident

        a, b = await asyncio.gather(one(), one())
        return a, b

    a, b = asyncio.run(both())

    assert a != b


def test_a_thread_still_busy_for_a_cancelled_request_serves_no_other():
    threads = RequestThreads()
    release = threading.Event()
    started = threading.Event()
    busy: list[int] = []

    def blocking() -> None:
        busy.append(threading.get_ident())
        started.set()
        release.wait(10)

    async def cancelled_then_next() -> int:
        async def first() -> None:
            async with threads.request():
                await sync_to_async(blocking)()

        task = asyncio.ensure_future(first())
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()
        await asyncio.wait({task})
        async with threads.request():
            ident = await _thread()  # answered while the first thread blocks
        release.set()
        await until_idle(threads, 2)  # the first thread, once it is done
        return ident

    ident = asyncio.run(cancelled_then_next())

    assert busy
    assert ident != busy[0]


@pytest.mark.django_db  # the guard checks the engine secret keys at start
def test_the_guard_serves_requests_in_kept_threads():
    async def app(scope: Any, receive: Any, send: Any) -> None:
        ident = await _thread()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(ident).encode()})

    guard = BoundaryGuard(app)

    async def get() -> bytes:
        sent: list[bytes] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Mapping[str, Any]) -> None:
            if message["type"] == "http.response.body":
                sent.append(message["body"])

        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": "GET",
            "path": "/",
            "raw_path": b"/",
            "headers": [(b"host", b"testserver")],
        }
        await guard(scope, receive, send)
        return b"".join(sent)

    async def twice() -> tuple[bytes, bytes]:
        first = await get()
        await until_idle(guard.threads, 1)
        return first, await get()

    first, second = asyncio.run(twice())

    assert first == second
    assert int(first) != threading.get_ident()
