"""The health views through the test client, on the reference URLconf."""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError, connection
from django.test import Client, override_settings

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


def test_probes_refuse_writes(client: Client) -> None:
    assert client.post("/healthz").status_code == 405
