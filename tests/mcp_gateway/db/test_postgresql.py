"""The PostgreSQL backend's health check: the socket first, then the server.

Each test drives a connection of its own (outside the test's transaction)
through what Django does around a request: ``close_if_unusable_or_obsolete``
at its start and end, a query in between.
"""

from __future__ import annotations

import select
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections

from mcp_gateway.db.postgresql import base
from mcp_gateway.db.postgresql.base import RECENT_SECONDS, DatabaseWrapper

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL (DATABASE_URL)"
)


@pytest.fixture
def wrapper(db: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[DatabaseWrapper]:
    """A health-checked connection of the test database, counting its checks."""
    made = connections.create_connection("default")
    assert isinstance(made, DatabaseWrapper)  # the reference settings' ENGINE
    # Persistent and checked, as under WSGI (the tests may say otherwise).
    made.settings_dict = {
        **made.settings_dict,
        "CONN_MAX_AGE": 600,
        "CONN_HEALTH_CHECKS": True,
    }
    made.checks = 0  # type: ignore[attr-defined]
    usable = made.is_usable

    def counted() -> bool:
        made.checks += 1  # type: ignore[attr-defined]
        return usable()

    monkeypatch.setattr(made, "is_usable", counted)
    yield made
    made.close()


def request(wrapper: DatabaseWrapper) -> Any:
    """One request's work as Django frames it: its one query's answer."""
    wrapper.close_if_unusable_or_obsolete()  # request_started
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    wrapper.close_if_unusable_or_obsolete()  # request_finished
    return pid


def test_a_connection_that_just_answered_is_not_asked_again(wrapper):
    first = request(wrapper)  # a new connection: nothing to check

    assert request(wrapper) == first
    assert request(wrapper) == first
    assert wrapper.checks == 0


def test_a_connection_quiet_for_longer_is_checked_by_the_server(wrapper):
    first = request(wrapper)
    wrapper.answered_at -= RECENT_SECONDS  # as if it had been idle since

    assert request(wrapper) == first
    assert wrapper.checks == 1


def test_a_connection_the_server_closed_is_replaced_before_the_query(wrapper):
    first = request(wrapper)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    wait_readable(wrapper)  # the server's goodbye has arrived

    second = request(wrapper)  # answered recently, but its socket speaks

    assert second != first
    assert wrapper.checks == 1


def wait_readable(wrapper: DatabaseWrapper) -> None:
    poller = select.poll()
    poller.register(wrapper.connection.pgconn.socket, select.POLLIN)
    deadline = time.monotonic() + 10
    while not poller.poll(50):
        assert time.monotonic() < deadline, "the server never closed it"


# -- Taken from psycopg's pool (the ASGI default) --------------------------------------


@pytest.fixture
def pooled(db: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[DatabaseWrapper]:
    """A connection of the test database from a pool of one, health-checked
    as under ASGI, counting the pool's checks that reach the server."""
    made = connections.create_connection("default")
    assert isinstance(made, DatabaseWrapper)
    made.alias = "pooled_health_check"  # a pool of its own (Django keys by alias)
    made.settings_dict = {
        **made.settings_dict,
        "CONN_MAX_AGE": 0,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            **made.settings_dict.get("OPTIONS", {}),
            "pool": {"min_size": 1, "max_size": 1},
        },
    }
    assert made.pool is not None
    made.checks = 0  # type: ignore[attr-defined]
    check = base._pool_check()

    def counted(conn: Any) -> None:
        made.checks += 1  # type: ignore[attr-defined]
        check(conn)

    monkeypatch.setattr(base, "_pool_check", lambda: counted)
    yield made
    made.close()
    made.close_pool()


def in_pool(wrapper: DatabaseWrapper) -> Any:
    """The pool's one connection, idle between requests."""
    with wrapper.pool.connection() as idle:
        return idle


def test_a_pooled_connection_that_just_answered_is_taken_unchecked(pooled):
    first = request(pooled)  # a new connection: checked once

    assert request(pooled) == first
    assert request(pooled) == first
    assert pooled.checks == 1


def test_a_pooled_connection_quiet_for_longer_is_checked_by_the_server(pooled):
    first = request(pooled)
    base._pooled_answered[in_pool(pooled)] -= RECENT_SECONDS

    assert request(pooled) == first
    assert pooled.checks == 2


def test_a_pooled_connection_the_server_closed_is_replaced(pooled):
    first = request(pooled)
    idle = in_pool(pooled)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    poller = select.poll()
    poller.register(idle.pgconn.socket, select.POLLIN)
    assert poller.poll(10_000), "the server never closed it"

    second = request(pooled)  # answered recently, but its socket speaks

    assert second != first
    assert pooled.checks >= 2
