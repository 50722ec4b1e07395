"""Audit rows written from the event loop, with psycopg's async connection.

Under ASGI a warm ``tools/call`` needs the database for one thing: its
audit row. Handing that INSERT to a request thread costs more than the
whole answer over HTTP (a thread wake-up and GIL hand-overs per call), so
on PostgreSQL with psycopg the row is written from the loop instead:
through ``psycopg.AsyncConnection`` in autocommit, at most
``CONNECTIONS_PER_LOOP`` per event loop and database alias (opened as
writes overlap), with the same INSERT and parameters the sync path sends
(``AUDIT_DURABILITY`` as there: ``async`` commits with
``synchronous_commit`` off, ``durable`` waits for the flush). The answer
is sent only once its row is committed, as on the sync path; a request
whose client leaves meanwhile still has its row written (the write is not
cancelled with it; should it fail, that is logged).

A row the database refuses (a tenant deleted meanwhile, a value it will
not store) is stored without what was refused, as ``log._insert`` stores
it. A connection the server closed while it was idle (an idle timeout, a
restart) is noticed before it is used and replaced. A failure during the
write is raised as Django's ``DatabaseError`` (the view answers 503;
``mcp_audit_write_failures_total`` counts it) and is not retried: the
statement may have been committed.

The connections are closed when their loop shuts down (``asyncio.run``
and uvicorn finalize async generators then), so no session outlives its
loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from django.db import DatabaseError, connections, router

from mcp_gateway.audit.models import ToolCall
from mcp_gateway.observability import metrics

logger = logging.getLogger("mcp_gateway")

APPLICATION_NAME = "mcp-gateway-audit"
"""The loop's connections' ``application_name`` (``pg_stat_activity``),
unless the database's ``OPTIONS`` name one."""

Row = dict[str, Any]
Statement = Callable[[Row, str], tuple[str, Sequence[Any]]]


def available() -> str | None:
    """The audit table's alias if rows can be written from the loop: its
    backend is psycopg 3 on PostgreSQL, and Django still refuses sync
    database work on the loop (``DJANGO_ALLOW_ASYNC_UNSAFE`` unset)."""
    if os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE"):
        return None
    alias = router.db_for_write(ToolCall)
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return None
    if getattr(getattr(connection, "Database", None), "__name__", "") != "psycopg":
        return None
    return alias


CONNECTIONS_PER_LOOP = 4
"""At most this many connections per event loop and alias, opened only as
writes overlap (a durable commit waits for the disk: one connection would
make a worker's calls wait for each other's)."""

CONNECT_TIMEOUT = 10
"""Seconds to wait for a new connection, unless the database's ``OPTIONS``
give ``connect_timeout``."""

WAIT_SECONDS = 30.0
"""Seconds a write waits for a free connection (as psycopg's pool waits
for one on the sync path); then it fails (the request answers 503)."""

KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 60_000,
}
"""TCP keep-alives and a bound on unacknowledged data, unless the
database's ``OPTIONS`` set them: a connection whose server vanished
without closing it (a host gone) fails within about a minute instead of
the kernel's minutes to hours, idle or in a write."""


class _Writer:
    """One loop's connections to one alias, each writing one statement at
    a time; a connection the server closed while it was idle is left for
    a new one before it is used."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self._idle: list[Any] = []
        self._opened = 0
        self._freed = asyncio.Condition()
        self._closer: AsyncIterator[None] | None = None

    async def execute(self, sql: str, params: Sequence[Any]) -> None:
        connection = await self._take()
        try:
            await connection.execute(sql, params)
        finally:
            await self._give_back(connection)

    async def _take(self) -> Any:
        async with asyncio.timeout(WAIT_SECONDS), self._freed:
            while True:
                while self._idle:
                    connection = self._idle.pop()
                    if _usable(connection):
                        return connection
                    self._opened -= 1
                    await _close(connection)
                if self._opened < CONNECTIONS_PER_LOOP:
                    self._opened += 1
                    break
                await self._freed.wait()
        try:
            return await self._connect()
        except BaseException:
            async with self._freed:
                self._opened -= 1
                self._freed.notify()  # a waiter may try to connect now
            raise

    async def _give_back(self, connection: Any) -> None:
        async with self._freed:
            if connection.closed or connection.broken:
                self._opened -= 1
                await _close(connection)
            else:
                self._idle.append(connection)
            self._freed.notify()

    async def _connect(self) -> Any:
        import psycopg
        from psycopg import sql

        database = connections[self.alias]
        params = dict(database.get_connection_params())
        params.pop("cursor_factory", None)  # Django's sync cursor class
        params.setdefault("application_name", APPLICATION_NAME)
        params.setdefault("connect_timeout", CONNECT_TIMEOUT)
        for name, value in KEEPALIVES.items():
            params.setdefault(name, value)
        connection = await psycopg.AsyncConnection.connect(**params, autocommit=True)
        role = database.settings_dict["OPTIONS"].get("assume_role")
        try:
            if role:  # as Django's own connections take it
                await connection.execute(
                    sql.SQL("SET ROLE {}").format(sql.Identifier(role))
                )
        except BaseException:
            await _close(connection)
            raise
        if self._closer is None:
            self._closer = _closing(self)
            await anext(self._closer)  # suspended until the loop shuts down
        return connection

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await _close(connection)


def _usable(connection: Any) -> bool:
    """False if the server closed the idle connection (terminated, restarted,
    an idle timeout): it then sent its reason, so the socket is readable.
    An idle connection in autocommit that listens to nothing is sent
    nothing else."""
    if connection.closed or connection.broken:
        return False
    poller = select.poll()  # not select(): a worker may hold 1,024 sockets
    try:
        poller.register(connection.fileno(), select.POLLIN)
        return not poller.poll(0)
    except (OSError, ValueError):
        return False


async def _close(connection: Any) -> None:
    with contextlib.suppress(Exception):
        await connection.close()


async def _closing(writer: _Writer) -> AsyncIterator[None]:
    """Closes ``writer``'s connection when the loop finalizes it at shutdown."""
    try:
        yield
    finally:
        await writer.close()


_writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Writer]] = (
    weakref.WeakKeyDictionary()
)


def _writer(alias: str) -> _Writer:
    loop = asyncio.get_running_loop()
    by_alias = _writers.setdefault(loop, {})
    writer = by_alias.get(alias)
    if writer is None:
        writer = by_alias[alias] = _Writer(alias)
    return writer


async def insert(
    row: Row,
    alias: str,
    statement: Statement,
    refused: Callable[[Row], Row],
) -> None:
    """Write ``row`` (``statement`` gives its SQL and parameters) and wait
    for its commit; a row the database refuses is written as
    ``refused(row)`` gives it. The write goes on if the caller is cancelled.

    Raises:
        DatabaseError: the database could not be reached or failed.
    """
    task = asyncio.ensure_future(_insert(row, alias, statement, refused))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(_left)
        raise


def _left(task: asyncio.Future[None]) -> None:
    """A row whose caller was cancelled meanwhile: its failure is logged."""
    if not task.cancelled() and task.exception() is not None:
        logger.error(
            "Audit row not written after its request was cancelled",
            exc_info=task.exception(),
        )


async def _insert(
    row: Row, alias: str, statement: Statement, refused: Callable[[Row], Row]
) -> None:
    import psycopg

    writer = _writer(alias)
    try:
        try:
            await writer.execute(*statement(row, alias))
        except (psycopg.errors.DataError, psycopg.errors.IntegrityError):
            logger.exception(
                "Audit row of %s:%s %s refused; stored without it",
                row["tenant_slug"],
                row["tool_name"],
                row["outcome"],
            )
            await writer.execute(*statement(refused(row), alias))
    except (psycopg.Error, OSError) as exc:
        metrics.audit_write_failed(row["tenant_slug"])
        raise DatabaseError("The audit row could not be written.") from exc
