"""The audit log: one row per tools/call that reached dispatch; changes too."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import DataError, IntegrityError, connection
from django.test import Client
from django.utils import timezone

from demo.basic import Add
from engines_app.context import Principal
from engines_app.registry import EngineRegistry
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit import callrecord
from mcp_gateway.audit import log as audit
from mcp_gateway.audit.models import ExposureEvent, Outcome, ToolCall
from mcp_gateway.models import Tenant
from tests.rpc import post_rpc


def rpc(client: Client, secret: str, method: str, params: Any, id: Any = 1) -> Any:
    return post_rpc(client, secret, method, params, id=id, version=None)


@pytest.fixture
def exposed(tenant: Tenant, issued_token: tokens.IssuedToken) -> str:
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.fail", "demo.reject"])
    return issued_token.secret


def test_outcome_choices_match_the_call_record():
    assert set(Outcome.values) == set(callrecord.OUTCOMES)


def test_rows_equal_calls_that_reached_dispatch(client, exposed):
    calls = [
        ("tools/call", {"name": "demo_echo", "arguments": {"text": "hi"}}),
        ("tools/call", {"name": "demo_fail", "arguments": {}}),
        ("tools/call", {"name": "demo_reject", "arguments": {}}),
        ("tools/call", {"name": "demo_echo", "arguments": {"text": 3}}),
        ("tools/call", {"name": "nope", "arguments": {}}),
    ]
    for method, params in calls:
        rpc(client, exposed, method, params)
    rpc(client, exposed, "tools/list", {})
    rpc(client, "mcpgw_bad_token", *calls[0])

    outcomes = list(ToolCall.objects.order_by("pk").values_list("outcome", flat=True))

    assert outcomes == ["ok", "failed", "tool_error", "tool_error", "invalid"]


def test_a_row_names_who_called_what_and_how(client, exposed, issued_token):
    rpc(
        client,
        exposed,
        "tools/call",
        {"name": "demo_echo", "arguments": {"text": "x"}},
        id="abc",
    )

    row = ToolCall.objects.get()

    assert row.tenant_slug == "acme"
    assert row.user == "alice"
    assert row.token_prefix == issued_token.token.prefix
    assert (row.tool_name, row.engine_id) == ("demo_echo", "demo.echo")
    assert row.engine_version == "1.0.0"
    assert row.request_id == "abc"
    assert row.protocol_version == "2025-03-26"
    assert row.arguments is None
    assert row.duration_ms >= 0


def test_arguments_are_kept_only_when_the_tenant_asks_and_redacted(
    client, tenant, exposed
):
    Tenant.objects.filter(pk=tenant.pk).update(
        audit_arguments=True, audit_redacted_keys=["TEXT"]
    )

    rpc(
        client, exposed, "tools/call", {"name": "demo_echo", "arguments": {"text": "s"}}
    )

    assert ToolCall.objects.get().arguments == {"text": audit.REDACTED}


def test_redaction_reaches_nested_values():
    value = {"a": [{"password": "x", "b": 1}], "Password": 2}

    assert audit.redact(value, frozenset({"password"})) == {
        "a": [{"password": audit.REDACTED, "b": 1}],
        "Password": audit.REDACTED,
    }


def test_exposure_changes_are_recorded_with_actor_and_channel(tenant, staff):
    bookkeeping.expose(tenant, "demo.echo", by=staff, via="admin")
    bookkeeping.expose_all(tenant, registry=only_add())
    bookkeeping.unexpose(tenant, "demo.echo", via="api")
    bookkeeping.unexpose(tenant, "demo.echo")  # nothing to remove: no event
    bookkeeping.clear(tenant, via="command")

    events = list(ExposureEvent.objects.order_by("pk"))

    assert [(e.action, e.via) for e in events] == [
        ("expose", "admin"),
        ("expose_all", "code"),
        ("unexpose", "api"),
        ("clear", "command"),
    ]
    assert events[0].actor == staff
    assert events[0].actor_name == "root"
    assert events[0].engine_ids == ["demo.echo"]
    assert [e.catalog_version for e in events] == sorted(
        e.catalog_version for e in events
    )


def only_add() -> EngineRegistry:
    registry = EngineRegistry()
    registry.register(Add())
    return registry


def test_commands_record_their_channel(tenant):
    call_command("mcp_expose", "acme", "demo.echo", stdout=None)

    assert ExposureEvent.objects.get().via == "command"


def test_prune_deletes_only_old_rows(tenant):
    bookkeeping.expose(tenant, "demo.echo")
    ExposureEvent.objects.update(created_at=timezone.now() - timedelta(days=40))
    bookkeeping.unexpose(tenant, "demo.echo")

    call_command("mcp_audit", "prune", "--older-than", "30", stdout=None)

    assert list(ExposureEvent.objects.values_list("action", flat=True)) == ["unexpose"]


def test_the_audit_admin_is_read_only_with_a_date_hierarchy(client, staff, exposed):
    rpc(
        client, exposed, "tools/call", {"name": "demo_echo", "arguments": {"text": "x"}}
    )
    client.force_login(staff, backend="django.contrib.auth.backends.ModelBackend")

    listing = client.get("/admin/mcp_gateway/toolcall/?outcome=ok")
    add = client.get("/admin/mcp_gateway/toolcall/add/")
    events = client.get("/admin/mcp_gateway/exposureevent/")

    assert listing.status_code == 200
    assert b"demo_echo" in listing.content
    assert add.status_code == 403
    assert events.status_code == 200


HOSTILE_ARGUMENTS = [
    {"nul\u0000key": "nul\u0000value"},
    {"text": "\ud83d\ude00 \uffff \u2028"},
    {"big": 2**200, "small": -(2**200), "tiny": 5e-324, "huge": 1.7976931348623157e308},
    {"deep": json.loads("[" * 60 + "]" * 60)},
    {"": "", " ": None, "0": False},
    {"escaped": "\\u0000 and \\ud800 as text"},
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("durability", ["durable", "async"])
@pytest.mark.parametrize("arguments", HOSTILE_ARGUMENTS, ids=range(6))
def test_every_call_leaves_exactly_one_row_whatever_its_arguments(
    client, tenant, exposed, arguments, durability, settings
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_DURABILITY": durability}
    Tenant.objects.filter(pk=tenant.pk).update(audit_arguments=True)

    response = rpc(
        client, exposed, "tools/call", {"name": "demo_echo", "arguments": arguments}
    )

    assert response.status_code == 200
    row = ToolCall.objects.get()
    assert row.outcome in ("ok", "tool_error")
    assert row.arguments is not None


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "arguments",
    [
        {"x": math.inf},
        {"x": [-math.inf, math.nan]},
        {"lone": "\ud800"},
        {"\udfff": 1},
    ],
    ids=["inf", "nan", "lone surrogate", "surrogate key"],
)
def test_a_value_no_database_stores_is_replaced_not_lost(tenant, arguments):
    Tenant.objects.filter(pk=tenant.pk).update(audit_arguments=True)
    tenant.refresh_from_db()
    record = callrecord.CallRecord()
    record.begin(1, {"name": "demo_echo"}, "2025-11-25")
    record.arguments = audit.arguments_to_keep(tenant, arguments)
    record.finish(callrecord.OK)

    audit.record_call(record, tenant, Principal(tenant="acme", user="alice"))

    stored = json.dumps(ToolCall.objects.get().arguments)
    assert "Infinity" not in stored
    assert "NaN" not in stored
    assert "\\ud" not in stored  # no surrogate, escaped or not


@pytest.mark.django_db(transaction=True)
def test_a_tenant_deleted_during_the_call_still_gets_its_row(tenant):
    record = callrecord.CallRecord()
    record.begin(1, {"name": "demo_echo"}, "2025-11-25")
    record.finish(callrecord.OK)
    Tenant.objects.filter(pk=tenant.pk).delete()

    audit.record_call(record, tenant, Principal(tenant="acme", user="alice"))

    row = ToolCall.objects.get()
    assert (row.tenant_id, row.tenant_slug) == (None, "acme")


def test_a_busy_answer_is_audited_busy_whatever_made_it():
    busy = '{"code":"BUSY","message":"The server is busy; try again shortly."}'

    assert callrecord.outcome_of(True, busy) == "busy"
    assert "busy" in Outcome.values


def _row_as_a_model_had_it(
    record: callrecord.CallRecord, tenant: Tenant, principal: Principal, when: Any
) -> ToolCall:
    """The ``ToolCall`` a call's row was once built as, on every call: what
    ``audit.call_row`` must keep giving the INSERT, value for value."""
    assert record.outcome is not None
    user, token_prefix = audit.actor_of(principal)
    return ToolCall(
        tenant=tenant,
        tenant_slug=tenant.slug,
        user=user,
        token_prefix=token_prefix,
        tool_name=record.tool_name,
        engine_id=callrecord.storable(record.engine_id)[:200],
        engine_version=callrecord.storable(record.engine_version)[:64],
        outcome=record.outcome,
        duration_ms=min(record.duration_ms, 2**31 - 1),
        request_id=record.request_id,
        protocol_version=record.protocol_version,
        arguments=audit.storable_json(record.arguments),
        error_code=record.error_code,
        created_at=when,
    )


def _hostile_record(case: int) -> tuple[callrecord.CallRecord, Principal]:
    record = callrecord.CallRecord()
    odd = "nul\u0000 \ud800 é 🙂 " * 30
    record.begin([odd] if case else 7, {"name": odd}, odd if case else "2025-11-25")
    record.engine_id = odd
    record.engine_version = odd if case else ""
    arguments: list[dict[str, Any] | None] = [
        {"nul\u0000key": "nul\u0000value"},
        {"big": 2**200, "text": "\ud83d\ude00 \u2028"},
        {"x": math.inf},
        None,
    ]
    record.arguments = arguments[case % len(arguments)]
    record.started -= 10**8 if case == 3 else 0  # a duration past 2**31 ms
    record.finish(callrecord.TOOL_ERROR if case else callrecord.OK, odd if case else "")
    user = odd if case else None
    token = "mcpgw_0123456789abcdef" if case else None  # a stored prefix, cut
    return record, Principal(tenant="acme", user=user, token=token)


def _insert_as_a_model_had_it(call: ToolCall) -> None:
    """The INSERT of ``call``, then the one without what was refused."""
    inserter = audit._inserter(connection.alias)
    try:
        inserter.insert(call)
    except (DataError, IntegrityError):
        call.tenant = None
        call.arguments = None if call.arguments is None else audit.UNSTORABLE
        inserter.insert(call)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", range(5))
def test_a_calls_insert_sends_what_the_model_of_its_row_would(
    tenant, case, monkeypatch, caplog
):
    record, principal = _hostile_record(case)
    if case == 4:  # deleted during the call: its key refused
        Tenant.objects.filter(pk=tenant.pk).delete()
    when = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: when)
    model = _row_as_a_model_had_it(record, tenant, principal, when)
    by_record: list[tuple[str, str]] = []
    by_model: list[tuple[str, str]] = []

    def into(sent: list[tuple[str, str]]) -> Any:
        def wrapper(execute, sql, params, many, context):
            sent.append((sql, repr(params)))
            return execute(sql, params, many, context)

        return connection.execute_wrapper(wrapper)

    with into(by_record):
        audit.record_call(record, tenant, principal)
    with into(by_model):
        _insert_as_a_model_had_it(model)

    assert by_record == by_model
    assert len(by_record) in (1, 2)  # a refused row: its second INSERT
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert refused == [f"Audit row of {model} refused; stored without it"] * (
        len(by_record) - 1
    )
