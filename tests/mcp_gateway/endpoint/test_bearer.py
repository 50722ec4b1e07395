"""SIGNAL_BEARER_FAILURES: whether failed bearer tokens fire user_login_failed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.signals import user_login_failed
from django.core.exceptions import PermissionDenied

from tests.rpc import post_rpc


@pytest.fixture
def failures() -> Iterator[list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    def record(sender: Any, credentials: dict[str, Any], **kwargs: Any) -> None:
        seen.append(credentials)

    user_login_failed.connect(record)
    yield seen
    user_login_failed.disconnect(record)


def quiet(settings: Any) -> None:
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "SIGNAL_BEARER_FAILURES": False}


def test_by_default_a_failed_token_fires_the_signal(client, tenant, failures):
    response = post_rpc(client, "mcpgw_nope_nope", "tools/list", {})

    assert response.status_code == 401
    assert [c["bearer_token"] for c in failures] == ["********************"]


def test_switched_off_a_failed_token_fires_nothing(client, tenant, failures, settings):
    quiet(settings)

    response = post_rpc(client, "mcpgw_nope_nope", "tools/list", {})

    assert response.status_code == 401
    assert failures == []


def test_switched_off_a_valid_token_still_authenticates(
    client, token, failures, settings
):
    quiet(settings)

    response = post_rpc(client, token, "tools/list", {})

    assert response.status_code == 200
    assert failures == []


class Refusing:
    """A backend that stops authentication, as a lockout backend does."""

    def authenticate(self, request: Any, **credentials: Any) -> None:
        raise PermissionDenied


def test_switched_off_a_backend_that_refuses_still_stops_it(
    client, token, failures, settings
):
    quiet(settings)
    settings.AUTHENTICATION_BACKENDS = [
        f"{__name__}.Refusing",
        *settings.AUTHENTICATION_BACKENDS,
    ]

    response = post_rpc(client, token, "tools/list", {})

    assert response.status_code == 401
    assert failures == []
