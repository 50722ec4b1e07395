"""Under ASGI on PostgreSQL, a warm request is answered on the event loop.

Its audit row is written with psycopg's async connection from the loop
(``audit.onloop``), so the request makes no hop to a thread; whatever is
not in memory yet sends it to its thread from the start, once.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.db import connection

from mcp_gateway import bookkeeping, catalog, tokens
from mcp_gateway.asgi import BoundaryGuard
from mcp_gateway.audit import onloop
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import ApiToken, Membership, Tenant
from tests.mcp_gateway.endpoint.servers import asgi_request, asgi_scope
from tests.reliability.test_audit import HOSTILE_ARGUMENTS

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="psycopg's async connection"
    ),
]


def _call(text: str, request_id: Any = 1) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "demo_echo", "arguments": {"text": text}},
        }
    ).encode()


LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()


@pytest.fixture(autouse=True)
def _exposed(tenant: Any, principal_cache: None) -> None:
    bookkeeping.expose_many(tenant, ["demo.echo"])


def post(token: str, *bodies: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """POST each body in turn through one guard, on one loop."""
    return post_then(token, bodies)[0]


def post_then(
    token: str, bodies: Sequence[bytes], then: Callable[[], Any] = lambda: None
) -> tuple[list[tuple[int, dict[str, str], bytes]], Any]:
    """:func:`post`'s answers, and what ``then()`` returns in a thread of
    its own after the last, while the loop (and its connections) lives."""
    guard = BoundaryGuard(ASGIHandler())

    async def main() -> tuple[list[tuple[int, dict[str, str], bytes]], Any]:
        answers = []
        for body in bodies:
            status, headers, content = await asgi_request(
                guard, asgi_scope(token, body=body), body
            )
            answers.append((status, dict(headers), content))
        return answers, await _in_a_thread(then)

    return asyncio.run(main())


def _rows() -> list[tuple[str, str, str]]:
    return list(
        ToolCall.objects.order_by("pk").values_list(
            "tool_name", "outcome", "request_id"
        )
    )


def test_a_warm_call_makes_no_hop_and_its_row_is_written(token, hops):
    """The first call reads the token in its thread; the second is answered
    on the loop, its row written from there, its response finished there."""
    first, second = post(token, _call("one", 1), _call("two", 2))

    assert first[0] == second[0] == 200
    assert json.loads(second[2])["result"]["structuredContent"] == {"text": "two"}
    assert hops.count("mcp-request") == 1  # the first call's only
    assert second[1]["X-Frame-Options"] == "DENY"  # the response hooks ran
    assert second[1]["Content-Length"] == str(len(second[2]))
    assert _rows() == [("demo_echo", "ok", "1"), ("demo_echo", "ok", "2")]


def test_a_warm_list_makes_no_hop(token, hops):
    """The first list is the SDK's (in a thread); the kept answer comes from
    the loop."""
    answers = post(token, LIST, LIST, LIST)

    assert [status for status, _, _ in answers] == [200, 200, 200]
    assert answers[2][2] == answers[1][2]
    assert hops.count("mcp-request") == 2  # the first list's: its hop, the SDK's
    assert _rows() == []


def test_a_site_receiver_of_the_request_signals_keeps_calls_in_their_thread(
    token, hops
):
    """A receiver other than Django's own may do database work: the loop
    leaves every request to its thread, where the receiver runs."""
    from django.core import signals

    seen: list[int] = []

    def receiver(**kwargs: Any) -> None:
        seen.append(threading.get_ident())

    signals.request_finished.connect(receiver)
    try:
        answers = post(token, _call("one", 1), _call("two", 2))
    finally:
        signals.request_finished.disconnect(receiver)

    assert [status for status, _, _ in answers] == [200, 200]
    assert hops.count("mcp-request") == 2
    assert threading.get_ident() not in seen


def test_a_catalog_no_longer_kept_sends_the_request_to_its_thread(token, hops):
    """A catalog the process no longer keeps (its cache holds the busiest
    tenants') is built from the database: that request goes to its thread
    from the start, and is answered as the first was."""
    guard = BoundaryGuard(ASGIHandler())

    async def main() -> list[tuple[int, bytes, int]]:
        answers = []
        for index in range(4):
            if index == 3:
                catalog.clear_cache()
            status, _, content = await asgi_request(
                guard, asgi_scope(token, body=LIST), LIST
            )
            answers.append((status, content, hops.count("mcp-request")))
        return answers

    answers = asyncio.run(main())

    assert [status for status, _, _ in answers] == [200, 200, 200, 200]
    assert json.loads(answers[3][1]) == json.loads(answers[2][1])
    # The first list: its first hop and the SDK's answer; the kept answer
    # from the loop; the fourth, with its catalog built again, as the first.
    assert [count for _, _, count in answers] == [2, 2, 2, 4]


async def _in_a_thread(function: Any, *args: Any) -> Any:
    """``function(*args)`` in a thread of its own, its connection closed."""

    def closing() -> Any:
        try:
            return function(*args)
        finally:
            connection.close()

    return await sync_to_async(closing, thread_sensitive=False)()


def test_a_warm_clients_notification_is_accepted_in_its_thread(token, hops):
    """A client's notification (or answer) is relayed from a thread: read
    on the loop, it is admitted again there and accepted."""
    initialized = json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ).encode()

    answers = post(token, _call("one", 1), initialized, initialized)

    assert [status for status, _, _ in answers] == [200, 202, 202]
    assert hops.count("mcp-request") == 3


def test_the_setting_off_sends_every_call_to_its_thread(token, hops, settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ASGI_LOOP_ANSWERS": False}

    answers = post(token, _call("one", 1), _call("two", 2))

    assert [status for status, _, _ in answers] == [200, 200]
    assert hops.count("mcp-request") == 2
    assert len(_rows()) == 2


def test_a_token_whose_use_is_due_sends_the_call_to_its_thread(token, hops, settings):
    """A token's ``last_used_at`` due on every call is a write the loop may
    not make: the token is not accepted from memory, and each call is
    served in its thread, with one row each and the token's use recorded."""
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "TOKEN_LAST_USED_INTERVAL_SECONDS": 0,
    }

    answers = post(token, _call("one", 1), _call("two", 2), _call("three", 3))

    assert [status for status, _, _ in answers] == [200, 200, 200]
    assert hops.count("mcp-request") == 3
    assert [request_id for _, _, request_id in _rows()] == ["1", "2", "3"]
    assert ApiToken.objects.get().last_used_at is not None


def _audit_backends(cursor: Any, *, state: str = "") -> list[tuple[int, str]]:
    """The loop's audit connections to this database: (pid, last query)."""
    cursor.execute(
        "SELECT pid, query FROM pg_stat_activity WHERE application_name = %s "
        "AND datname = current_database() AND (%s = '' OR wait_event_type = %s)",
        [onloop.APPLICATION_NAME, state, state],
    )
    found: list[tuple[int, str]] = cursor.fetchall()
    return found


def _audit_backends_now() -> list[tuple[int, str]]:
    with connection.cursor() as cursor:
        return _audit_backends(cursor)


def _terminate_audit_backends() -> int:
    with connection.cursor() as cursor:
        pids = [pid for pid, _ in _audit_backends(cursor)]
        cursor.execute(  # waits until each has exited
            "SELECT pg_terminate_backend(pid, 5000) FROM unnest(%s) pid", [pids]
        )
    return len(pids)


def test_an_idle_connection_the_server_closed_is_replaced_before_use(token):
    """The loop's connection terminated by the server while idle (a restart,
    an idle timeout): the next call notices before writing, opens a new one,
    and is answered with its row written."""
    guard = BoundaryGuard(ASGIHandler())

    async def main() -> list[int]:
        statuses = []
        for index, body in enumerate((_call("a", 1), _call("b", 2), _call("c", 3))):
            if index == 2:
                assert await _in_a_thread(_terminate_audit_backends) == 1
            status, _, _ = await asgi_request(guard, asgi_scope(token, body=body), body)
            statuses.append(status)
        return statuses

    assert asyncio.run(main()) == [200, 200, 200]
    assert [request_id for _, _, request_id in _rows()] == ["1", "2", "3"]


def _connect() -> Any:
    import psycopg

    params = dict(connection.get_connection_params())
    params.pop("cursor_factory", None)
    return psycopg.connect(**params, autocommit=True)


def test_a_connection_lost_during_the_write_answers_503_then_the_next_reconnects(
    token,
):
    """Lost while its INSERT runs, the row's fate is unknown: that call
    answers 503 (nothing internal said) and is not retried; the next call
    opens a new connection and is answered."""
    guard = BoundaryGuard(ASGIHandler())
    locker, watcher = _connect(), _connect()

    async def main() -> list[tuple[int, bytes]]:
        answers = []
        body = _call("a", 1)
        status, _, content = await asgi_request(
            guard, asgi_scope(token, body=body), body
        )
        answers.append((status, content))
        locker.execute("BEGIN")
        locker.execute(f"LOCK TABLE {ToolCall._meta.db_table} IN EXCLUSIVE MODE")
        body = _call("b", 2)
        call = asyncio.ensure_future(
            asgi_request(guard, asgi_scope(token, body=body), body)
        )
        for _ in range(500):  # until its INSERT waits for the lock
            await asyncio.sleep(0.01)
            waiting = _audit_backends(watcher.cursor(), state="Lock")
            if waiting:
                break
        assert len(waiting) == 1
        watcher.execute("SELECT pg_terminate_backend(%s)", [waiting[0][0]])
        status, _, content = await call
        answers.append((status, content))
        locker.execute("ROLLBACK")
        body = _call("c", 3)
        status, _, content = await asgi_request(
            guard, asgi_scope(token, body=body), body
        )
        answers.append((status, content))
        return answers

    try:
        first, lost, third = asyncio.run(main())
    finally:
        locker.close()
        watcher.close()

    assert (first[0], lost[0], third[0]) == (200, 503, 200)
    assert json.loads(lost[1])["error"]["code"] == -32000
    assert json.loads(lost[1])["id"] == 2
    assert b"Traceback" not in lost[1]
    assert b"psycopg" not in lost[1]
    assert b"INSERT" not in lost[1]
    assert [request_id for _, _, request_id in _rows()] == ["1", "3"]


@pytest.mark.parametrize("durability", ["durable", "async"])
def test_the_row_written_on_the_loop_keeps_its_durability(
    token, hops, settings, durability
):
    """``durable`` waits for the flush; ``async`` turns ``synchronous_commit``
    off for the row's own transaction, as on the sync path."""
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_DURABILITY": durability}

    answers, backends = post_then(
        token, [_call("one", 1), _call("two", 2)], _audit_backends_now
    )

    assert [status for status, _, _ in answers] == [200, 200]
    assert hops.count("mcp-request") == 1
    ((_, query),) = backends
    assert query.startswith("INSERT INTO")
    assert ("synchronous_commit" in query) is (durability == "async")
    assert len(_rows()) == 2


@pytest.mark.parametrize("arguments", HOSTILE_ARGUMENTS, ids=range(6))
def test_every_call_answered_on_the_loop_leaves_one_row_whatever_its_arguments(
    token, tenant, hops, arguments
):
    Tenant.objects.filter(pk=tenant.pk).update(audit_arguments=True)
    hostile = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "demo_echo", "arguments": arguments},
        }
    ).encode()

    answers = post(token, _call("one", 1), hostile)

    assert [status for status, _, _ in answers] == [200, 200]
    assert hops.count("mcp-request") == 1
    row = ToolCall.objects.get(request_id="2")
    assert row.outcome in ("ok", "tool_error")
    assert row.arguments is not None


@pytest.fixture
def done(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The outcome of each call whose end was observed (metrics, span)."""
    from mcp_gateway.observability import observe

    outcomes: list[str] = []
    call_done = observe.call_done

    def counted(record: Any, tenant: Any) -> None:
        outcomes.append(record.outcome)
        call_done(record, tenant)

    monkeypatch.setattr(observe, "call_done", counted)
    return outcomes


def test_a_call_the_scopes_do_not_cover_is_refused_in_its_thread(tenant, hops, done):
    """A refusal's challenge reads the tenant's authorization servers: the
    call is left to its thread before anything is done, and is refused
    there once, with its row."""
    bookkeeping.expose_many(tenant, ["demo.fail"])
    reader = tokens.issue(tenant, tenant_member(tenant), scopes=("mcp:tools:read",))
    fail = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "demo_fail", "arguments": {}},
        }
    ).encode()

    answers = post(reader.secret, _call("one", 1), fail)

    assert [status for status, _, _ in answers] == [200, 403]
    assert json.loads(answers[1][2])["id"] == 2
    assert hops.count("mcp-request") == 2
    assert done == ["ok", "denied"]
    assert _rows() == [("demo_echo", "ok", "1"), ("demo_fail", "denied", "2")]


def tenant_member(tenant: Tenant) -> Any:
    from django.contrib.auth.models import User

    user = User.objects.create_user("rita")
    Membership.objects.create(tenant=tenant, user=user)
    return user


def test_a_wrong_secret_is_refused_in_its_thread_and_signalled_once(token, hops):
    """A kept token's prefix with another secret is not accepted from
    memory: the request is its thread's, and the failure is signalled once."""
    from django.contrib.auth.signals import user_login_failed

    failed: list[Any] = []

    def receiver(**kwargs: Any) -> None:
        failed.append(kwargs)

    parts, wrong = tokens.split(token), token[:-4] + "aaaa"
    assert wrong != token
    assert parts is not None
    assert tokens.split(wrong) == (parts[0], wrong.rsplit("_", 1)[1])
    user_login_failed.connect(receiver)
    try:
        answers = post(token, _call("one", 1))
        answers += post(wrong, _call("two", 2))
    finally:
        user_login_failed.disconnect(receiver)

    assert [status for status, _, _ in answers] == [200, 401]
    assert hops.count("mcp-request") == 2
    assert len(failed) == 1
    assert _rows() == [("demo_echo", "ok", "1")]


def test_a_browsers_origin_sends_the_call_to_its_thread(token, hops, settings):
    """An ``Origin`` is checked against the tenant's row: in the thread."""
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "ALLOWED_ORIGINS": ("https://app.example",),
    }
    guard = BoundaryGuard(ASGIHandler())

    async def main() -> list[int]:
        statuses = []
        for index in (1, 2):
            body = _call("x", index)
            scope = asgi_scope(token, body=body)
            scope["headers"].append((b"origin", b"https://app.example"))
            status, _, _ = await asgi_request(guard, scope, body)
            statuses.append(status)
        return statuses

    assert asyncio.run(main()) == [200, 200]
    assert hops.count("mcp-request") == 2
    assert len(_rows()) == 2


def test_a_catalog_with_a_restricted_tool_keeps_calls_in_their_thread(
    tenant, token, hops
):
    """The user's groups are read on every request then: in the thread."""
    from django.contrib.auth.models import Group

    (exposure,) = bookkeeping.expose_many(tenant, ["demo.add"])
    bookkeeping.restrict(exposure, [Group.objects.create(name="finance")])

    answers = post(token, _call("one", 1), _call("two", 2))

    assert [status for status, _, _ in answers] == [200, 200]
    assert hops.count("mcp-request") == 2
    assert len(_rows()) == 2


def test_without_the_fast_path_every_call_goes_to_its_thread(token, settings):
    """Django's whole handler then finishes the response: nothing is
    answered, nor written, from the loop."""
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ASGI_FAST_PATH": False}

    answers, backends = post_then(
        token, [_call("one", 1), _call("two", 2)], _audit_backends_now
    )

    assert [status for status, _, _ in answers] == [200, 200]
    assert len(_rows()) == 2
    assert backends == []


def test_with_the_fast_path_the_loop_has_its_audit_connection(token):
    """The observation above, when the loop does write: it can fail."""
    answers, backends = post_then(
        token, [_call("one", 1), _call("two", 2)], _audit_backends_now
    )

    assert [status for status, _, _ in answers] == [200, 200]
    assert len(backends) == 1


def test_database_work_found_on_the_loop_sends_the_call_to_its_thread_once(
    token, hops, done, settings, monkeypatch
):
    """Should the loop meet database work after all (here the token's use
    due, which ``admissible`` is made to overlook), Django refuses it before
    the query and the call is served in its thread from the start: the same
    answer, one row, its end observed once, the token's use recorded."""
    from mcp_gateway import backends, principals

    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "TOKEN_LAST_USED_INTERVAL_SECONDS": 0,
    }

    def overlooking(bearer_token: str, slug: str) -> Any:
        parts = tokens.split(bearer_token)
        return None if parts is None else principals.get(parts[0], slug)

    monkeypatch.setattr(backends, "accepts_from_memory", overlooking)

    answers = post(token, _call("one", 1), _call("two", 2))

    assert [status for status, _, _ in answers] == [200, 200]
    assert json.loads(answers[1][2])["result"]["structuredContent"] == {"text": "two"}
    assert hops.count("mcp-request") == 2
    assert done == ["ok", "ok"]
    assert [request_id for _, _, request_id in _rows()] == ["1", "2"]
    assert ApiToken.objects.get().last_used_at is not None


def test_a_chunked_body_over_the_limit_is_413_as_in_its_thread(token, settings):
    """A body of no declared length is not read on the loop: admission
    reads it, up to the limit, and refuses the rest."""
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "MAX_REQUEST_BYTES": 1000}
    guard = BoundaryGuard(ASGIHandler())
    oversized = b" " * 1001 + _call("x", 2)

    async def main() -> list[int]:
        statuses = []
        for body in (_call("a", 1), oversized):
            scope = asgi_scope(token, body=body)
            if body is oversized:
                scope["headers"] = [
                    (name, value)
                    for name, value in scope["headers"]
                    if name != b"content-length"
                ]
            status, _, _ = await asgi_request(guard, scope, body)
            statuses.append(status)
        return statuses

    assert asyncio.run(main()) == [200, 413]
    assert [request_id for _, _, request_id in _rows()] == ["1"]
