"""PostgreSQL LISTEN/NOTIFY: notified in the caller's transaction."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import psycopg
from django.db import connections
from psycopg import sql

from mcp_gateway.bus.transport import (
    PING_SECONDS,
    TICK_SECONDS,
    Counters,
    Receiver,
)

APPLICATION_NAME = "mcpgw-bus {pid}"
"""How the listening connection names itself in ``pg_stat_activity``."""
_NOT_FOR_LIBPQ = ("cursor_factory", "context", "prepare_threshold")
_DEFAULTS = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 15_000,
}


def listen_params(alias: str) -> dict[str, Any]:
    """libpq parameters of a ``DATABASES`` alias, for a connection of our own."""
    params = dict(connections[alias].get_connection_params())
    for key in _NOT_FOR_LIBPQ:
        params.pop(key, None)
    return {**_DEFAULTS, **params}


class PostgresTransport:
    name = "postgresql"

    def __init__(self, params: dict[str, Any], counters: Counters) -> None:
        self._params = params
        self._counters = counters

    def channel(self, topic: str) -> str:
        return f"mcpgw_{topic}"

    def publish(self, channel: str, payload: str, *, using: str) -> None:
        # NOTIFY is transactional: PostgreSQL delivers it when the caller's
        # transaction commits and drops it when it rolls back.
        with connections[using].cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [channel, payload])
        self._counters.add("published")

    def listen(
        self, channels: Sequence[str], receiver: Receiver, stop: threading.Event
    ) -> None:
        name = APPLICATION_NAME.format(pid=os.getpid())
        params = {**self._params, "application_name": name, "autocommit": True}
        with psycopg.connect(**params) as conn:
            for channel in channels:
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            receiver.listening()
            pinged = time.monotonic()
            while not stop.is_set():
                for note in conn.notifies(timeout=TICK_SECONDS):
                    receiver.received(note.channel, note.payload)
                if time.monotonic() - pinged >= PING_SECONDS:
                    conn.execute("SELECT 1")  # notices a silently dead link
                    pinged = time.monotonic()

    def wake(self) -> None:
        """The loop polls its stop flag every ``TICK_SECONDS``."""

    def close(self) -> None:
        """Publishing borrows the caller's connection: nothing to release."""
