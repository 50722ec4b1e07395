"""``AUDIT_DURABILITY``: every call's row lands in either mode, and
``async`` changes only the audit row's own commit (PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from engines_app.context import Principal
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit import callrecord
from mcp_gateway.audit import log as audit
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.checks import check_settings
from mcp_gateway.models import Tenant
from tests.rpc import post_rpc

MODES = ["durable", "async"]
ASYNC_COMMIT = "set_config('synchronous_commit', 'off', true)"
on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="runs on PostgreSQL (DATABASE_URL=postgres://…)",
)


@pytest.fixture
def durability(request: Any, settings: Any) -> str:
    mode: str = request.param
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_DURABILITY": mode}
    return mode


@pytest.fixture
def exposed(tenant: Tenant, issued_token: tokens.IssuedToken) -> str:
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.fail", "demo.reject"])
    return issued_token.secret


def call(client: Any, secret: str, name: str, arguments: Any, id: int) -> int:
    params = {"name": name, "arguments": arguments}
    response = post_rpc(client, secret, "tools/call", params, id=id)
    return int(response.status_code)


def audit_inserts(captured: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith('INSERT INTO "mcp_gateway_toolcall"')
    ]


def show_synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


def a_record() -> callrecord.CallRecord:
    record = callrecord.CallRecord()
    record.begin(1, {"name": "demo_echo"}, "2025-11-25")
    record.finish(callrecord.OK)
    return record


def test_an_unknown_durability_is_a_check_error(settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_DURABILITY": "fast"}

    errors = check_settings(None)

    assert [e.id for e in errors] == ["mcp_gateway.E007"]
    assert "'fast'" in errors[0].msg
    assert "'async'" in (errors[0].hint or "")


@pytest.mark.parametrize("durability", MODES, indirect=True)
def test_either_durability_passes_the_checks(durability):
    assert check_settings(None) == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("durability", MODES, indirect=True)
def test_every_call_gets_its_row_in_either_mode(client, exposed, durability):
    calls = [
        ("demo_echo", {"text": "hi"}),
        ("demo_fail", {}),
        ("demo_reject", {}),
        ("demo_echo", {"text": 3}),
        ("nope", {}),
    ]

    statuses = [call(client, exposed, *c, id=n) for n, c in enumerate(calls)]

    assert statuses == [200] * len(calls)
    rows = ToolCall.objects.order_by("pk").values_list("request_id", "outcome")
    assert list(rows) == [
        ("0", "ok"),
        ("1", "failed"),
        ("2", "tool_error"),
        ("3", "tool_error"),
        ("4", "invalid"),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_call_costs_the_same_queries_in_either_mode(client, exposed, settings):
    call(client, exposed, "demo_echo", {"text": "warm"}, id=0)
    captured = {}
    for n, mode in enumerate(MODES, start=1):
        settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_DURABILITY": mode}
        with CaptureQueriesContext(connection) as captured[mode]:
            call(client, exposed, "demo_echo", {"text": "hi"}, id=n)

    durable, asynchronous = captured["durable"], captured["async"]
    assert len(asynchronous) == len(durable)
    for queries in (durable, asynchronous):
        # One INSERT, the call's last query, on the request's own thread.
        assert audit_inserts(queries) == [queries.captured_queries[-1]["sql"]]
    assert ASYNC_COMMIT not in audit_inserts(durable)[0]
    on_postgresql = connection.vendor == "postgresql"
    assert (ASYNC_COMMIT in audit_inserts(asynchronous)[0]) is on_postgresql


@on_postgresql
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("durability", ["async"], indirect=True)
def test_the_async_commit_ends_with_the_rows_own_transaction(tenant, durability):
    assert show_synchronous_commit() == "on"

    audit.record_call(a_record(), tenant, Principal(tenant="acme", user="alice"))

    assert ToolCall.objects.count() == 1
    assert show_synchronous_commit() == "on"  # the next commit waits again


@on_postgresql
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("durability", ["async"], indirect=True)
def test_inside_a_callers_transaction_its_commit_is_left_durable(tenant, durability):
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        audit.record_call(a_record(), tenant, Principal(tenant="acme", user="alice"))
        during = show_synchronous_commit()

    assert during == "on"
    [insert] = audit_inserts(captured)
    assert ASYNC_COMMIT not in insert
    assert ToolCall.objects.count() == 1
