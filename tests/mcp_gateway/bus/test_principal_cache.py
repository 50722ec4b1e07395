"""A kept principal is dropped by a bus event alone, as another process sends."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.contrib.auth import authenticate
from django.utils import timezone

from mcp_gateway import bus, principals, tokens
from mcp_gateway.bus import PrincipalKind
from mcp_gateway.models import Tenant
from tests.mcp_gateway.bus.helpers import eventually

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def local(settings, fresh_bus):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}


def test_an_event_from_another_process_drops_the_kept_token_within_a_second(
    local, django_user_model
):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    user = django_user_model.objects.create_user("alice")
    issued = tokens.issue(tenant, user)
    principals.listen()
    eventually(principals.listening, "the cache listens")
    authenticate(None, bearer_token=issued.secret, tenant="acme")
    assert principals.get(issued.token.prefix, "acme") is not None

    # Another process: a bus event alone, no local drop.
    bus.publish(
        bus.PrincipalChanged(
            PrincipalKind.TOKEN_REVOKED, tenant=tenant.pk, token=issued.token.prefix
        )
    )

    deadline = time.monotonic() + 1.0  # the issue's bound with the bus up
    while principals.get(issued.token.prefix, "acme") is not None:
        assert time.monotonic() < deadline, "still kept after 1 s"
        time.sleep(0.01)


def test_a_kept_principal_is_trusted_no_longer_than_the_bound(
    local, settings, django_user_model
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "PRINCIPAL_CACHE_SECONDS": 0.2}
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    issued = tokens.issue(tenant, django_user_model.objects.create_user("alice"))
    principals.listen()
    eventually(principals.listening, "the cache listens")
    authenticate(None, bearer_token=issued.secret, tenant="acme")
    assert principals.get(issued.token.prefix, "acme") is not None

    time.sleep(0.3)  # no event at all, as when the bus is down

    assert principals.get(issued.token.prefix, "acme") is None


def test_a_kept_token_that_expires_is_refused_without_an_event(
    local, django_user_model
):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    issued = tokens.issue(tenant, django_user_model.objects.create_user("alice"))
    principals.listen()
    eventually(principals.listening, "the cache listens")
    assert authenticate(None, bearer_token=issued.secret, tenant="acme") is not None
    kept = principals.get(issued.token.prefix, "acme")
    assert kept is not None

    kept.expires_at = timezone.now() - timedelta(seconds=1)  # its time came

    assert authenticate(None, bearer_token=issued.secret, tenant="acme") is None
