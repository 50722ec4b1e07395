"""PostgreSQL whose health check asks the socket before the server.

``ENGINE = "mcp_gateway.db.postgresql"``: Django's PostgreSQL backend,
except for ``CONN_HEALTH_CHECKS``. Django's check is a ``SELECT 1`` round
trip before each request's first query (with psycopg's pool, ``OPTIONS =
{"pool": ...}``, the pool's own empty-query round trip each time a
connection is taken); this one skips it for a connection that answered
within the last :data:`RECENT_SECONDS` and whose socket is quiet (open,
idle, nothing to read), and runs that check otherwise.

A server that closes a connection (a restart, ``pg_terminate_backend``,
``idle_session_timeout``, a proxy giving up on it) sends its last message
and closes the socket, which makes it readable: such a connection is never
quiet, so it is still replaced before the request's first query. The
recent answer covers what a socket cannot show: a middlebox that forgot an
idle connection and resets it at the next packet forgets only connections
idle for minutes, never one that answered a second ago.
"""

from __future__ import annotations

import select
import time
import weakref
from typing import Any

from django.db.backends.postgresql import base
from psycopg import pq

RECENT_SECONDS = 1.0
"""How recently a connection must have answered for its check to be skipped."""

_NEVER = float("-inf")


class DatabaseWrapper(base.DatabaseWrapper):
    health_check_enabled: bool  # Django's own, set when it connects
    health_check_done: bool
    answered_at = _NEVER
    """When the server last answered on this connection (monotonic)."""
    queried = False
    """Whether a cursor was made since the last request boundary."""

    def connect(self) -> None:
        super().connect()
        self.answered_at = time.monotonic()

    def create_cursor(self, name: str | None = None) -> Any:
        self.queried = True
        return super().create_cursor(name)

    @property
    def pool(self) -> Any:
        pool = super().pool
        # Django gives the pool psycopg_pool's check when CONN_HEALTH_CHECKS
        # is on (and takes no check of the site's): this one skips its round
        # trip as ``close_if_health_check_failed`` below skips Django's.
        if pool is not None and getattr(pool, "_check", None) is _pool_check():
            pool._check = checked_unless_recent
        return pool

    def close_if_unusable_or_obsolete(self) -> None:
        # At a request's end: its queries all had their answers, unless one
        # failed on the connection (``errors_occurred``: Django checks it).
        if self.queried and self.connection is not None and not self.errors_occurred:
            self.answered_at = time.monotonic()
            if self.pool is not None:  # about to go back to the pool
                _pooled_answered[self.connection] = self.answered_at
        elif self.errors_occurred and self.connection is not None:
            _pooled_answered.pop(self.connection, None)  # checked when taken
        self.queried = False
        super().close_if_unusable_or_obsolete()

    def is_usable(self) -> bool:
        usable = bool(super().is_usable())
        if usable:
            self.answered_at = time.monotonic()
        return usable

    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is not None
            and self.health_check_enabled
            and not self.health_check_done
            and time.monotonic() - self.answered_at < RECENT_SECONDS
            and quiet(self.connection)
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()


_pooled_answered: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
"""When each pooled psycopg connection last answered a request's queries."""


def _pool_check() -> Any:
    from psycopg_pool import ConnectionPool  # the [postgres] extra's

    return ConnectionPool.check_connection


def checked_unless_recent(connection: Any) -> None:
    """psycopg_pool's check of a connection taken from the pool (an empty
    query; it raises if the connection is broken, and the pool replaces
    it), skipped for one that answered recently and is quiet."""
    recent = time.monotonic() - _pooled_answered.get(connection, _NEVER)
    if recent < RECENT_SECONDS and quiet(connection):
        return
    _pool_check()(connection)
    _pooled_answered[connection] = time.monotonic()


def quiet(connection: Any) -> bool:
    """Whether a psycopg connection is open and idle with nothing to read."""
    pgconn = connection.pgconn
    if (
        pgconn.status != pq.ConnStatus.OK
        or pgconn.transaction_status != pq.TransactionStatus.IDLE
    ):
        return False
    try:
        fd = pgconn.socket
    except Exception:  # closed meanwhile: not quiet
        return False
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return not poller.poll(0)  # any event (data, a hang-up, an error): not quiet
