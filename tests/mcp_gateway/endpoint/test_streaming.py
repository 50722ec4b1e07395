"""The notification channel between engines and the SSE stream."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from mcp_gateway.endpoint import sse
from mcp_gateway.endpoint.streaming import Channel, log_levels

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


def drained(params: Any, headers: dict[str, str], feed: Any) -> list[dict[str, Any]]:
    async def go() -> list[dict[str, Any]]:
        channel = Channel(params, headers)
        feed(channel)
        await asyncio.sleep(0)
        return channel.drain()

    return asyncio.run(go())


def test_progress_needs_a_token_and_only_ever_increases():
    def feed(channel: Channel) -> None:
        for value in (1, 1, 3, 2, 4):
            channel.progress(value, 4, None)

    with_token = drained({"_meta": {"progressToken": "t"}}, {}, feed)
    without = drained({}, {}, feed)

    assert [m["params"]["progress"] for m in with_token] == [1, 3, 4]
    assert without == []


def test_the_2025_wires_get_info_and_above():
    levels = log_levels({}, {"MCP-Protocol-Version": "2025-11-25"})

    assert "info" in levels
    assert "debug" not in levels
    assert "emergency" in levels


def test_2026_gets_log_lines_only_with_the_opt_in():
    opted = {"_meta": {**MODERN_META, "io.modelcontextprotocol/logLevel": "warning"}}

    assert log_levels({"_meta": MODERN_META}, {}) == frozenset()
    assert log_levels(opted, {}) >= {"warning", "error"}
    assert "info" not in log_levels(opted, {})


def test_log_lines_are_notifications_and_unknown_levels_count_as_info():
    def feed(channel: Channel) -> None:
        channel.log("WARNING", "careful")
        channel.log("chatty", "hello")
        channel.log("debug", "dropped")

    sent = drained({}, {}, feed)

    assert [m["method"] for m in sent] == ["notifications/message"] * 2
    assert [m["params"]["level"] for m in sent] == ["warning", "info"]
    assert sent[0]["params"]["data"] == "careful"


def test_engines_in_other_threads_may_report():
    async def go() -> list[dict[str, Any]]:
        channel = Channel({"_meta": {"progressToken": 5}}, {})
        worker = threading.Thread(target=channel.progress, args=(1.0, None, "x"))
        worker.start()
        await asyncio.to_thread(worker.join)
        assert await channel.wait(1.0)
        return channel.drain()

    assert asyncio.run(go())[0]["params"] == {
        "progressToken": 5,
        "progress": 1.0,
        "message": "x",
    }


def test_a_closed_channel_drops_everything():
    def feed(channel: Channel) -> None:
        channel.close()
        channel.progress(1, None, None)

    assert drained({"_meta": {"progressToken": 1}}, {}, feed) == []


def test_an_event_frames_one_message_and_keepalive_is_a_comment():
    framed = sse.event({"jsonrpc": "2.0", "method": "m", "params": {"é": 1}})

    data = '{"jsonrpc":"2.0","method":"m","params":{"é":1}}'
    assert framed == f"event: message\ndata: {data}\n\n".encode()
    assert sse.KEEPALIVE.startswith(b":")
    assert sse.HEADERS["X-Accel-Buffering"] == "no"


def test_only_an_explicit_event_stream_accept_asks_for_sse():
    assert sse.accepts_event_stream("application/json, text/event-stream")
    assert not sse.accepts_event_stream("*/*")
    assert not sse.accepts_event_stream("text/event-stream;q=0, application/json")
