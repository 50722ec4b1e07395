"""A tenant's calls in flight: leases taken, refused at the cap, given back.

The engines run through the adapter as every request runs them; a lease
must come back whatever ends the call.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import caches
from django.test import Client

from engines_app.context import EngineContext, Principal
from engines_app.engine import engine
from engines_app.errors import EngineError
from mcp_gateway import bookkeeping
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.limits import concurrency
from mcp_gateway.models import Tenant
from mcp_gateway.runtime.adapter import aexecute, build_context, execute
from tests.rpc import post_rpc

ACME = Principal(tenant="acme", user="alice")
GLOBEX = Principal(tenant="globex", user="bob")
release = threading.Event()


@engine("test.hold", name="Hold", description="Wait until released.")
def hold(context: EngineContext) -> Any:
    context.signal.wait(0.1)
    release.wait(5)
    return {"held": True}


@engine("test.boom", name="Boom", description="Fail.")
def boom(context: EngineContext) -> Any:
    raise RuntimeError("boom")


@engine("test.refuse", name="Refuse", description="Refuse.")
def refuse(context: EngineContext) -> Any:
    raise EngineError("NOPE", "No.")


@engine("test.overrun", name="Overrun", description="Ignore the deadline.")
def overrun(context: EngineContext) -> Any:
    release.wait(5)
    return {}


@engine("test.sleep_async", name="Sleep", description="Sleep until cancelled.")
async def sleep_async(context: EngineContext) -> Any:
    await asyncio.sleep(5)
    return {}


@pytest.fixture(autouse=True)
def capped(settings: Any) -> Iterator[None]:
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "MAX_CONCURRENT_CALLS_PER_TENANT": 1,
    }
    caches["default"].clear()
    release.clear()
    yield
    release.set()
    caches["default"].clear()


def context_for(
    target: Any, principal: Principal = ACME, seconds: float = 30
) -> EngineContext:
    return build_context(
        target, {}, principal=principal, config={}, deadline_seconds=seconds
    )


def code_of(result: Any) -> str | None:
    if not result.is_error:
        return None
    return str(json.loads(result.content[0].text)["code"])


def held() -> int:
    return concurrency.in_flight("acme", 1)


def wait_until(condition: Any) -> None:
    for _ in range(500):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("the condition never held")


def test_without_a_cap_no_lease_is_taken(settings):
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "MAX_CONCURRENT_CALLS_PER_TENANT": None,
    }
    release.set()

    assert code_of(execute(hold, {}, context_for(hold))) is None
    assert caches["default"].get("mcpgw:cc:acme:0") is None


def test_a_call_beyond_the_cap_is_busy_at_once_and_others_are_served():
    running = threading.Thread(target=execute, args=(hold, {}, context_for(hold)))
    running.start()
    wait_until(lambda: held() == 1)

    refused = execute(hold, {}, context_for(hold))
    other = build_context(hold, {}, principal=GLOBEX, config={}, deadline_seconds=5)
    served = threading.Thread(target=execute, args=(hold, {}, other))
    served.start()
    wait_until(lambda: concurrency.in_flight("globex", 1) == 1)
    release.set()
    running.join()
    served.join()

    assert code_of(refused) == "BUSY"
    assert held() == 0


@pytest.mark.parametrize(
    ("target", "code"),
    [(boom, "EXECUTION_FAILED"), (refuse, "NOPE")],
    ids=["error", "tool error"],
)
def test_a_lease_comes_back_after_a_failure(target, code):
    result = execute(target, {}, context_for(target))

    assert code_of(result) == code
    assert held() == 0


def test_a_lease_comes_back_after_a_timeout():
    result = execute(overrun, {}, context_for(overrun, seconds=0.2))

    assert code_of(result) == "TIMEOUT"
    assert held() == 0


def test_a_lease_comes_back_after_a_cancellation():
    context = context_for(sleep_async)

    async def go() -> None:
        call = asyncio.ensure_future(aexecute(sleep_async, {}, context))
        for _ in range(500):
            if held() == 1:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the call never took its lease")
        call.cancel()
        await asyncio.wait({call})

    asyncio.run(go())

    assert held() == 0


def test_a_lease_expires_after_the_deadline_plus_a_margin(monkeypatch):
    now = [1_000_000.0]
    monkeypatch.setattr(time, "time", lambda: now[0])  # the cache's clock
    context = context_for(hold, seconds=5)
    crashed = concurrency.acquire("acme", 1, concurrency._ttl(context))

    assert crashed is not None  # a worker died holding it
    assert concurrency.acquire("acme", 1, 1) is None
    now[0] += 5 + concurrency.MARGIN_SECONDS + 1
    assert concurrency.acquire("acme", 1, 1) is not None


def test_a_dead_cache_follows_rate_limit_fail_open(settings):
    dead = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"redis://127.0.0.1:{_free_port()}/0",
    }
    settings.CACHES = {**settings.CACHES, "dead": dead}
    release.set()
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "RATE_LIMIT_CACHE": "dead"}
    opened = execute(hold, {}, context_for(hold))
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "RATE_LIMIT_FAIL_OPEN": False}
    closed = execute(hold, {}, context_for(hold))

    assert (code_of(opened), code_of(closed)) == (None, "BUSY")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.django_db
def test_a_busy_call_is_audited_busy(client: Client, tenant, token):
    bookkeeping.expose(tenant, "demo.echo")
    caches["default"].set("mcpgw:cc:acme:0", "another call", 30)

    response = post_rpc(
        client, token, "tools/call", {"name": "demo_echo", "arguments": {"text": "x"}}
    )

    result = response.json()["result"]
    assert response.status_code == 200
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["code"] == "BUSY"
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["busy"]
    assert Tenant.objects.count() == 1


def test_a_late_release_never_frees_a_slot_another_call_holds_now(monkeypatch):
    held = concurrency.acquire("acme", 1, 5)
    assert held is not None
    caches["default"].set(held.key, "a later call", 30)  # ours expired meanwhile
    monkeypatch.setattr(time, "monotonic", lambda: held.expires + 1)

    concurrency.release(held)

    assert caches["default"].get(held.key) == "a later call"
