"""The in-process bus, in one process: commit, rollback, inbox, lifecycle."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.db import transaction

from mcp_gateway import bus
from tests.mcp_gateway.bus.helpers import Recorder, wait_listening

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def local(settings, fresh_bus):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}


def marker(recorder: Recorder, tenant: int = 999) -> None:
    """Publish a committed event and wait for it: all before it has arrived."""
    bus.publish(bus.CatalogChanged(tenant, 1))
    recorder.wait_for(lambda e: e == bus.CatalogChanged(tenant, 1))


def test_a_change_is_delivered_once_its_transaction_commits(local, recorder):
    bus.subscribe(bus.CatalogChanged, recorder)
    wait_listening()

    with transaction.atomic():
        bus.publish(bus.CatalogChanged(tenant=1, version=2))
        held = recorder.of(bus.CatalogChanged)

    assert held == []
    assert recorder.wait_for(lambda e: isinstance(e, bus.CatalogChanged)) == (
        bus.CatalogChanged(tenant=1, version=2)
    )
    assert bus.stats().backend == "local"


def test_a_rolled_back_change_reaches_nobody(local, recorder):
    bus.subscribe(bus.CatalogChanged, recorder)
    wait_listening()

    with transaction.atomic():
        bus.publish(bus.CatalogChanged(tenant=1, version=2))
        transaction.set_rollback(True)
    marker(recorder)

    assert recorder.of(bus.CatalogChanged) == [bus.CatalogChanged(999, 1)]


def test_a_subscriber_is_told_to_resync_when_the_bus_starts_listening(local, recorder):
    bus.subscribe(bus.CatalogChanged, recorder)

    assert recorder.wait_for(lambda e: True) == bus.Resync()


def test_a_subscriber_that_joins_a_listening_bus_owes_nothing(local, recorder):
    bus.subscribe(bus.PrincipalChanged, Recorder())
    wait_listening()

    bus.subscribe(bus.CatalogChanged, recorder)
    marker(recorder)

    assert recorder.events == [bus.CatalogChanged(999, 1)]


def test_a_message_reaches_its_addressee_only(local, recorder):
    bus.subscribe(bus.Message, recorder)
    bus.subscribe(bus.CatalogChanged, recorder)
    wait_listening()

    bus.send("0" * 32, {"for": "someone else"})
    bus.send(bus.process_id(), {"for": "me", "key": "mcpgw:answer:1"})
    marker(recorder)

    assert recorder.of(bus.Message) == [
        bus.Message(
            sender=bus.process_id(), data={"for": "me", "key": "mcpgw:answer:1"}
        )
    ]


@pytest.mark.parametrize("bad", ["", "ABC", "0" * 31, "0" * 32 + "\n", "../x"])
def test_sending_to_something_not_a_process_id_is_refused(local, bad):
    with pytest.raises(ValueError, match="process id"):
        bus.send(bad, {})


def test_a_raising_subscriber_does_not_starve_the_others(local, recorder):
    def broken(event):
        raise RuntimeError("subscriber bug")

    bus.subscribe(bus.CatalogChanged, broken)
    bus.subscribe(bus.CatalogChanged, recorder)
    wait_listening()

    marker(recorder)

    assert bus.stats().failures == 2  # its Resync and the marker
    assert bus.healthy() is True


def test_a_closed_subscription_hears_nothing_more(local, recorder):
    closed = Recorder()
    with bus.subscribe(bus.CatalogChanged, closed):
        wait_listening()
    bus.subscribe(bus.CatalogChanged, recorder)

    marker(recorder)

    assert closed.of(bus.CatalogChanged) == []
    assert bus.stats().subscribers == 1


def test_counters_count_what_was_published_received_and_delivered(local, recorder):
    bus.subscribe(bus.CatalogChanged, recorder)
    bus.subscribe(bus.CatalogChanged, Recorder())
    wait_listening()

    marker(recorder)
    marker(recorder, tenant=998)

    stats = bus.stats()
    assert (stats.published, stats.received, stats.reconnects) == (2, 2, 0)
    assert stats.delivered >= 4  # each event to two, plus their Resyncs


def test_close_stops_the_thread_and_ends_subscriptions(local, recorder):
    subscription = bus.subscribe(bus.CatalogChanged, recorder)
    wait_listening()
    first = bus.process_id()

    bus.close()

    assert "mcp-gateway-bus" not in [t.name for t in threading.enumerate()]
    assert subscription.active is False
    assert bus.process_id() != first
    assert bus.stats().started is False


def test_a_switched_off_bus_publishes_nothing_and_never_starts(settings, recorder):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "off"}

    bus.subscribe(bus.CatalogChanged, recorder)
    bus.publish(bus.CatalogChanged(1, 2))
    bus.send(bus.process_id(), {})

    stats = bus.stats()
    assert (stats.backend, stats.started, stats.published) == ("off", False, 0)
    assert bus.healthy() is True
    assert recorder.events == []


def test_an_asyncio_consumer_gets_events_on_its_loop(local):
    async def consume() -> list[bus.Event]:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[bus.Event] = asyncio.Queue()
        bus.subscribe(
            bus.Message,
            lambda event: loop.call_soon_threadsafe(events.put_nowait, event),
        )
        await events.get()  # the Resync
        await bus.asend(bus.process_id(), {"n": 1})
        return [await asyncio.wait_for(events.get(), 10)]

    assert asyncio.run(consume()) == [bus.Message(bus.process_id(), {"n": 1})]


def test_changing_the_backend_keeps_subscriptions_and_resyncs_them(settings, recorder):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}
    bus.subscribe(bus.CatalogChanged, recorder)
    wait_listening()
    first = bus.process_id()

    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local", "ENGINES": []}
    same = bus.process_id()
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "off"}
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}
    wait_listening()
    marker(recorder)

    assert same == first  # a change that leaves the backend alone keeps it
    assert bus.process_id() != first
    assert len(recorder.of(bus.Resync)) == 2
