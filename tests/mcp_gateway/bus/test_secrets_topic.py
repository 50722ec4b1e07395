"""Secret changes reach every process on the bus, and only once committed."""

from __future__ import annotations

import pytest
from django.db import transaction

from mcp_gateway import bus
from mcp_gateway.engine_secrets import service, store
from mcp_gateway.models import Tenant
from tests.mcp_gateway.bus.helpers import eventually, wait_listening

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def local(settings, fresh_bus):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}


def test_setting_a_secret_publishes_its_reference_on_commit(
    local, recorder, secret_keys, downstream
):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bus.subscribe(bus.SecretsChanged, recorder)
    wait_listening()

    with transaction.atomic():
        service.set_secret(tenant, "test.downstream", "API_KEY", "value-1")
        assert recorder.of(bus.SecretsChanged) == []

    event = recorder.wait_for(lambda e: isinstance(e, bus.SecretsChanged))
    assert event == bus.SecretsChanged(tenant=tenant.pk, engine="test.downstream")
    assert "value-1" not in repr(recorder.events)


def test_a_process_keeping_secrets_drops_them_when_another_changes_them(
    local, secret_keys, downstream
):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    service.set_secret(tenant, "test.downstream", "API_KEY", "value-1")
    store.for_engine(tenant.pk, "test.downstream")  # subscribes
    wait_listening()
    eventually(lambda: bus.stats().delivered >= 1, "the first resync")
    store.for_engine(tenant.pk, "test.downstream")
    assert store.cached(tenant.pk, "test.downstream") is not None

    # Another process: a bus event alone, no local on-commit drop.
    bus.publish(bus.SecretsChanged(tenant=tenant.pk, engine="test.downstream"))

    eventually(
        lambda: store.cached(tenant.pk, "test.downstream") is None,
        "the kept secrets are dropped",
    )
