"""A kept principal is dropped by a bus event alone, as another process sends.

Kept only over a bus that crosses processes (Redis here on SQLite, NOTIFY on
PostgreSQL); the in-process bus keeps nothing.
"""

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


def test_an_event_from_another_process_drops_the_kept_token_within_a_second(
    principal_cache, django_user_model
):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    user = django_user_model.objects.create_user("alice")
    issued = tokens.issue(tenant, user)
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
    principal_cache, settings, django_user_model
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "PRINCIPAL_CACHE_SECONDS": 0.2}
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    issued = tokens.issue(tenant, django_user_model.objects.create_user("alice"))
    authenticate(None, bearer_token=issued.secret, tenant="acme")
    assert principals.get(issued.token.prefix, "acme") is not None

    time.sleep(0.3)  # no event at all, as when the bus is down

    assert principals.get(issued.token.prefix, "acme") is None


def test_a_kept_token_that_expires_is_refused_without_an_event(
    principal_cache, django_user_model
):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    issued = tokens.issue(tenant, django_user_model.objects.create_user("alice"))
    assert authenticate(None, bearer_token=issued.secret, tenant="acme") is not None
    kept = principals.get(issued.token.prefix, "acme")
    assert kept is not None

    kept.expires_at = timezone.now() - timedelta(seconds=1)  # its time came

    assert authenticate(None, bearer_token=issued.secret, tenant="acme") is None


@pytest.mark.parametrize("backend", ["local", "off"])
def test_a_bus_that_reaches_no_other_process_keeps_nothing(
    principal_cache, settings, django_user_model, django_assert_num_queries, backend
):
    """Another process on the same SQLite file, or a management command,
    would change the row unheard: each request reads it."""
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": backend}
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    issued = tokens.issue(tenant, django_user_model.objects.create_user("alice"))
    assert authenticate(None, bearer_token=issued.secret, tenant="acme") is not None

    with django_assert_num_queries(1):  # the token's row, again
        assert authenticate(None, bearer_token=issued.secret, tenant="acme")

    assert principals.get(issued.token.prefix, "acme") is None


@pytest.mark.parametrize(
    ("revoked", "kept"), [("000000000000", True), (None, False)], ids=["other", "it"]
)
def test_a_row_read_while_a_change_lands_is_kept_unless_the_change_concerns_it(
    principal_cache, django_user_model, revoked, kept
):
    """A drop between the read and the keep may make the row stale: only
    one that concerns it (its token, user or tenant) stops it being kept."""
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    issued = tokens.issue(tenant, django_user_model.objects.create_user("alice"))
    prefix = issued.token.prefix
    since = principals.generation()  # as the backend, before its read

    principals.forget(
        bus.PrincipalChanged(PrincipalKind.TOKEN_REVOKED, token=revoked or prefix)
    )
    principals.keep(prefix, "acme", issued.token, since)

    assert (principals.get(prefix, "acme") is not None) is kept


def test_the_cache_listens_again_on_a_bus_that_already_listens(principal_cache):
    """Subscribed anew on a bus already listening (no ``Resync`` owed), as
    after ``bus.close()`` once another subscriber restarted the bus."""
    bus.close()  # ends the cache's subscriptions
    assert not principals.listening()
    with bus.subscribe(bus.CatalogChanged, lambda event: None):
        eventually(lambda: bus.stats().listening, "the new bus listens")

        principals.listen()

        assert principals.listening()


@pytest.mark.parametrize(
    "change", ["revoke", "deactivate", "leave", "tenant disabled", "token deleted"]
)
def test_each_way_staff_end_access_drops_the_kept_principal_at_once(
    principal_cache, django_user_model, change
):
    """Through the write paths staff use (the admin and API save or delete
    the rows; ``mcp_token revoke`` calls ``tokens.revoke``), not events."""
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    user = django_user_model.objects.create_user("alice")
    issued = tokens.issue(tenant, user)
    assert authenticate(None, bearer_token=issued.secret, tenant="acme") is not None
    assert principals.get(issued.token.prefix, "acme") is not None

    if change == "revoke":
        tokens.revoke(issued.token.prefix)
    elif change == "deactivate":
        user.is_active = False
        user.save()
    elif change == "leave":
        tenant.memberships.filter(user=user).delete()
    elif change == "tenant disabled":
        tenant.is_active = False
        tenant.save()
    else:
        issued.token.delete()

    deadline = time.monotonic() + 1.0  # the issue's bound with the bus up
    while principals.get(issued.token.prefix, "acme") is not None:
        assert time.monotonic() < deadline, "still kept after 1 s"
        time.sleep(0.01)
    assert authenticate(None, bearer_token=issued.secret, tenant="acme") is None
