"""The health views through the test client, on the reference URLconf."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import Client, override_settings

from mcp_gateway import bus
from tests.mcp_gateway.bus.helpers import eventually, need_redis_server
from tests.mcp_gateway.bus.test_reconnect import RedisServer

_DEAD_REDIS = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
    }
}


def test_liveness_answers_without_credentials_or_database(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert json.loads(response.content) == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_readiness_is_200_when_database_cache_and_bus_answer(client: Client) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert json.loads(response.content) == {"status": "ok"}


@pytest.mark.django_db
def test_readiness_is_503_while_the_cache_is_unreachable(client: Client) -> None:
    with override_settings(CACHES=_DEAD_REDIS):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert json.loads(response.content) == {"status": "unavailable"}
    assert b"127.0.0.1" not in response.content
    assert b"Error" not in response.content


@pytest.mark.django_db
def test_readiness_is_503_while_the_database_is_unreachable(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse() -> None:
        raise OperationalError("could not connect to server: secret-host")

    monkeypatch.setattr(connection, "cursor", refuse)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert json.loads(response.content) == {"status": "unavailable"}
    assert b"secret-host" not in response.content


@pytest.fixture
def bus_on_own_redis(settings: Any, tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis bus on a redis-server of this test's own, and nothing else on
    it: the default cache stays in memory, so only the bus can fail."""
    redis = RedisServer(need_redis_server(), tmp_path)
    redis.start()
    bus.close()
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "bus": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis.url,
        },
    }
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "BUS": "redis",
        "RATE_LIMIT_CACHE": "bus",
    }
    try:
        yield redis
    finally:
        bus.close()
        redis.stop()


@pytest.mark.django_db
def test_readiness_is_503_while_the_bus_is_down_and_200_once_it_is_back(
    client: Client, bus_on_own_redis: RedisServer
) -> None:
    bus.subscribe(bus.CatalogChanged, lambda event: None)
    eventually(lambda: bus.stats().listening, "the bus listens")
    assert client.get("/readyz").status_code == 200

    bus_on_own_redis.stop()
    eventually(lambda: not bus.healthy(), "the bus noticed")
    down = client.get("/readyz")
    bus_on_own_redis.start()
    eventually(bus.healthy, "the bus reconnected")
    back = client.get("/readyz")

    assert down.status_code == 503
    assert json.loads(down.content) == {"status": "unavailable"}
    assert str(bus_on_own_redis.port).encode() not in down.content
    assert back.status_code == 200


def test_probes_refuse_writes(client: Client) -> None:
    assert client.post("/healthz").status_code == 405
