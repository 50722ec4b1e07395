"""Redis pub/sub between OS processes sharing a Redis server."""

from __future__ import annotations

import logging
import os

import pytest
import redis

from mcp_gateway import bus
from tests.live.servers import free_port
from tests.mcp_gateway.bus.helpers import (
    REDIS_URL,
    Recorder,
    eventually,
    need_redis,
    wait_listening,
)
from tests.mcp_gateway.bus.peer import peers

pytestmark = pytest.mark.django_db(transaction=True)


def redis_cache(location: str) -> dict[str, object]:
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": location,
    }


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    need_redis()
    database = tmp_path_factory.mktemp("peers") / "peer.sqlite3"
    env = {
        "DATABASE_URL": f"sqlite:///{database}",
        "CACHE_URL": REDIS_URL,
        "MCP_BUS": "redis",
    }
    with peers(2, env) as both:
        yield both


@pytest.fixture
def on_redis(settings, fresh_bus):
    need_redis()
    settings.CACHES = {**settings.CACHES, "default": redis_cache(REDIS_URL)}
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "redis"}


def catalog(tenant: int, version: int):
    def wanted(line):
        return line.get("event") == "CatalogChanged" and (
            line["tenant"],
            line["version"],
        ) == (tenant, version)

    return wanted


def test_a_change_committed_in_one_process_reaches_the_other(pair):
    a, b = pair

    a.ask(op="publish", tenant=1, version=10)

    b.expect(catalog(1, 10))
    a.expect(catalog(1, 10))


def test_a_change_rolled_back_in_one_process_reaches_no_process(pair):
    a, b = pair

    a.ask(op="publish", tenant=2, version=20, commit=False)
    a.ask(op="publish", tenant=2, version=21)

    b.expect(catalog(2, 21))
    assert not [e for e in b.events("CatalogChanged") if e["version"] == 20]


def test_a_message_reaches_its_addressee_only_and_the_reply_comes_back(
    pair, on_redis, recorder
):
    a, b = pair
    bus.subscribe(bus.Message, recorder)
    wait_listening()

    a.ask(op="send", to=b.process_id, data={"request": "r1"})
    a.ask(op="send", to=bus.process_id(), data={"request": "r2"})
    asked = b.expect(lambda line: line.get("event") == "Message")
    b.ask(op="send", to=asked["sender"], data={"reply": "r1"})

    a.expect(lambda line: line.get("data") == {"reply": "r1"})
    assert recorder.wait_for(lambda e: isinstance(e, bus.Message)) == bus.Message(
        a.process_id, {"request": "r2"}
    )
    assert [e["data"] for e in b.events("Message")] == [{"request": "r1"}]
    assert [e["data"] for e in a.events("Message")] == [{"reply": "r1"}]


def test_one_listening_connection_per_process_however_many_subscribers(pair, on_redis):
    for _ in range(10):
        bus.subscribe(bus.CatalogChanged, Recorder())
        bus.subscribe(bus.PrincipalChanged, Recorder())
        bus.subscribe(bus.Message, Recorder())
    wait_listening()

    clients = redis.Redis.from_url(REDIS_URL).client_list()

    names = sorted(c["name"] for c in clients if c["name"].startswith("mcpgw-bus-"))
    pids = [os.getpid(), pair[0].pid, pair[1].pid]
    assert [n for n in names if int(n.rpartition("-")[2]) in pids] == sorted(
        f"mcpgw-bus-{pid}" for pid in pids
    )


def test_caches_on_other_database_numbers_of_one_server_never_hear_each_other(
    pair, on_redis, recorder, tmp_path
):
    bus.subscribe(bus.CatalogChanged, recorder)
    wait_listening()
    env = {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'other.sqlite3'}",
        "CACHE_URL": "redis://127.0.0.1:6379/12",
        "MCP_BUS": "redis",
    }

    with peers(1, env) as (stranger,):
        stranger.ask(op="publish", tenant=3, version=30)
        stranger.expect(catalog(3, 30))
    pair[0].ask(op="publish", tenant=3, version=31)

    recorder.wait_for(lambda e: e == bus.CatalogChanged(3, 31))
    assert bus.CatalogChanged(3, 30) not in recorder.events


def test_a_publish_redis_refuses_is_logged_and_the_commit_stands(
    settings, fresh_bus, caplog
):
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings.CACHES = {**settings.CACHES, "default": redis_cache(dead)}
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "redis"}

    with caplog.at_level(logging.WARNING, "mcp_gateway.bus"):
        bus.publish(bus.CatalogChanged(1, 2))

    assert "could not publish to Redis" in caplog.text
    assert (bus.stats().backend, bus.stats().failures) == ("redis", 1)


def test_a_bus_that_cannot_reach_redis_is_not_healthy(settings, fresh_bus, caplog):
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings.CACHES = {**settings.CACHES, "default": redis_cache(dead)}
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "redis"}
    recorder = Recorder()

    with caplog.at_level(logging.WARNING, "mcp_gateway.bus"):
        bus.subscribe(bus.CatalogChanged, recorder)
        assert bus.healthy() is False
        eventually(lambda: "cannot listen" in caplog.text, "a warning")

    assert recorder.events == []  # no Resync: it never listened
