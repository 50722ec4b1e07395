"""PostgreSQL LISTEN/NOTIFY between OS processes sharing the test database."""

from __future__ import annotations

import os

import pytest
from django.contrib.auth.models import User
from django.db import DataError, connection, transaction

from mcp_gateway import bookkeeping, bus
from mcp_gateway.bus import events
from mcp_gateway.models import Tenant
from tests.live.servers import database_url
from tests.mcp_gateway.bus.helpers import Recorder, wait_listening
from tests.mcp_gateway.bus.peer import peers

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="runs on PostgreSQL (DATABASE_URL=postgres://…)",
    ),
]


@pytest.fixture(scope="module")
def pair(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    with peers(2, {"DATABASE_URL": url, "MCP_BUS": "auto"}) as both:
        yield both


def catalog(tenant: int, version: int):
    def wanted(line):
        return line.get("event") == "CatalogChanged" and (
            line["tenant"],
            line["version"],
        ) == (tenant, version)

    return wanted


def test_a_change_committed_in_one_process_reaches_the_other(pair):
    a, b = pair

    a.ask(op="publish", tenant=10_001, version=10)

    b.expect(catalog(10_001, 10))
    a.expect(catalog(10_001, 10))  # and its own subscribers


def test_a_change_rolled_back_in_one_process_reaches_no_process(pair):
    a, b = pair

    a.ask(op="publish", tenant=10_002, version=20, commit=False)
    a.ask(op="publish", tenant=10_002, version=21)

    b.expect(catalog(10_002, 21))
    assert not [e for e in b.events("CatalogChanged") if e["version"] == 20]


def test_a_catalog_change_made_by_bookkeeping_reaches_another_process(pair):
    _, b = pair
    tenant = Tenant.objects.create(slug="acme", name="Acme")

    bookkeeping.expose(tenant, "demo.echo")

    tenant.refresh_from_db()
    b.expect(catalog(tenant.pk, tenant.catalog_version))


def test_a_bookkeeping_change_rolled_back_by_its_caller_is_never_heard(pair):
    _, b = pair
    tenant = Tenant.objects.create(slug="acme", name="Acme")

    with transaction.atomic():
        bookkeeping.expose(tenant, "demo.echo")
        transaction.set_rollback(True)
    bookkeeping.expose(tenant, "demo.add")

    tenant.refresh_from_db()
    b.expect(catalog(tenant.pk, tenant.catalog_version))
    heard = {
        e["version"] for e in b.events("CatalogChanged") if e["tenant"] == tenant.pk
    }
    assert heard == {tenant.catalog_version}


def test_a_message_reaches_its_addressee_only_and_the_reply_comes_back(pair, recorder):
    a, b = pair
    bus.subscribe(bus.Message, recorder)
    wait_listening()

    a.ask(op="send", to=b.process_id, data={"request": "r1"})
    a.ask(op="send", to=bus.process_id(), data={"request": "r2"})
    asked = b.expect(lambda line: line.get("event") == "Message")
    b.ask(op="send", to=asked["sender"], data={"reply": "r1"})

    a.expect(lambda line: line.get("data") == {"reply": "r1"})
    assert recorder.wait_for(lambda e: isinstance(e, bus.Message)) == bus.Message(
        a.process_id, {"request": "r2"}
    )
    assert asked["data"] == {"request": "r1"}
    assert [e["data"] for e in b.events("Message")] == [{"request": "r1"}]
    assert [e["data"] for e in a.events("Message")] == [{"reply": "r1"}]


def test_a_message_sent_in_a_rolled_back_transaction_is_never_delivered(pair):
    a, b = pair

    a.ask(op="send", to=b.process_id, data={"n": 1}, commit=False)
    a.ask(op="send", to=b.process_id, data={"n": 2})

    b.expect(lambda line: line.get("data") == {"n": 2})
    assert {"n": 1} not in [e["data"] for e in b.events("Message")]


def test_one_listening_connection_per_process_however_many_subscribers(pair, fresh_bus):
    for _ in range(10):
        bus.subscribe(bus.CatalogChanged, Recorder())
        bus.subscribe(bus.PrincipalChanged, Recorder())
        bus.subscribe(bus.Message, Recorder())
    wait_listening()

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT application_name FROM pg_stat_activity"
            " WHERE datname = current_database()"
            " AND application_name LIKE 'mcpgw-bus %%'"
        )
        names = sorted(row[0] for row in cursor.fetchall())

    pids = sorted([os.getpid(), pair[0].pid, pair[1].pid])
    assert names == sorted(f"mcpgw-bus {pid}" for pid in pids)
    assert bus.stats().subscribers == 30


def test_the_largest_payload_travels_and_postgresql_refuses_one_byte_more(
    recorder,
):
    bus.subscribe(bus.Message, recorder)
    wait_listening()
    envelope = len(events.encode({"from": bus.process_id(), "data": {"k": ""}}))
    data = {"k": "a" * (events.MAX_PAYLOAD_BYTES - envelope)}

    bus.send(bus.process_id(), data)

    assert recorder.wait_for(lambda e: isinstance(e, bus.Message)).data == data
    with (
        pytest.raises(DataError, match="payload string too long"),
        connection.cursor() as cursor,
    ):
        cursor.execute("SELECT pg_notify('x', %s)", ["a" * 8000])
    User.objects.count()  # the connection is still usable


def test_auto_picks_postgresql_when_the_default_database_is(fresh_bus):
    assert bus.stats().backend == "postgresql"
