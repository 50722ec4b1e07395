"""Every principal and catalog change is published on the bus once committed.

Runs on the bus the settings pick (in-process on SQLite, LISTEN/NOTIFY on
PostgreSQL), through real commits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.db import transaction

from mcp_gateway import bookkeeping, bus, tokens
from mcp_gateway.bus import PrincipalChanged
from mcp_gateway.bus import PrincipalKind as Kind
from mcp_gateway.models import ApiToken, Membership, Tenant
from tests.mcp_gateway.bus.helpers import Recorder, wait_listening

pytestmark = pytest.mark.django_db(transaction=True)
MARKER = PrincipalChanged("marker")

Heard = Callable[[], list[PrincipalChanged]]


@pytest.fixture
def heard(tenant, member, issued_token) -> Iterator[Heard]:
    """What was published since the last call (after the fixtures' data)."""
    bus.close()
    recorder = Recorder()
    bus.subscribe(bus.PrincipalChanged, recorder)
    wait_listening()

    def settle() -> list[PrincipalChanged]:
        bus.publish(MARKER)
        recorder.wait_for(lambda event: event == MARKER)
        events = recorder.of(PrincipalChanged)
        recorder.events.clear()
        return events[: events.index(MARKER)]

    yield settle
    bus.close()


def test_revoking_a_token_publishes_its_references(heard, tenant, member, issued_token):
    tokens.revoke(issued_token.token.prefix)

    assert heard() == [
        PrincipalChanged(
            Kind.TOKEN_REVOKED,
            tenant=tenant.pk,
            user=member.pk,
            token=issued_token.token.prefix,
        )
    ]


def test_a_token_already_revoked_or_merely_saved_publishes_nothing(heard, issued_token):
    token = issued_token.token
    token.name = "laptop"
    token.save()
    tokens.revoke(token.prefix)
    heard()

    tokens.revoke(token.prefix)
    token.refresh_from_db()
    token.save()
    token.save(update_fields=["name"])

    assert heard() == []


def test_deleting_a_token_publishes_its_references(heard, tenant, member, issued_token):
    prefix = issued_token.token.prefix

    issued_token.token.delete()

    assert heard() == [
        PrincipalChanged(
            Kind.TOKEN_DELETED, tenant=tenant.pk, user=member.pk, token=prefix
        )
    ]


def test_deactivating_a_user_publishes_once(heard, member):
    member.first_name = "Alice"
    member.save()

    member.is_active = False
    member.save()
    member.save()  # still inactive: no news
    member.save(update_fields=["last_login"])

    assert heard() == [PrincipalChanged(Kind.USER_DEACTIVATED, user=member.pk)]


def test_deleting_a_user_publishes_it_and_what_it_held(
    heard, tenant, member, issued_token
):
    pk, prefix = member.pk, issued_token.token.prefix

    member.delete()

    assert sorted(heard(), key=str) == sorted(
        [
            PrincipalChanged(Kind.USER_DELETED, user=pk),
            PrincipalChanged(Kind.MEMBERSHIP_REMOVED, tenant=tenant.pk, user=pk),
            PrincipalChanged(
                Kind.TOKEN_DELETED, tenant=tenant.pk, user=pk, token=prefix
            ),
        ],
        key=str,
    )


def groups_changed(*users: User) -> list[PrincipalChanged]:
    return [PrincipalChanged(Kind.USER_GROUPS_CHANGED, user=u.pk) for u in users]


def test_changing_a_users_groups_publishes_from_either_side(heard, member):
    bob = User.objects.create_user("bob")
    staff = Group.objects.create(name="staff")
    ops = Group.objects.create(name="ops")

    member.groups.add(staff)
    member.groups.add(staff)  # already in it: no change
    member.groups.remove(staff)
    ops.user_set.add(member, bob)  # one event per user, in the set's order
    ops.user_set.remove(bob)
    assert sorted(heard(), key=str) == sorted(
        groups_changed(member, member, member, bob, bob), key=str
    )

    member.groups.clear()
    ops.user_set.add(bob)
    ops.user_set.clear()
    assert heard() == groups_changed(member, bob, bob)


def test_deleting_a_group_publishes_for_its_members(heard, member):
    bob = User.objects.create_user("bob")
    staff = Group.objects.create(name="staff")
    staff.user_set.add(member, bob)
    heard()

    staff.delete()

    assert sorted(heard(), key=str) == sorted(groups_changed(member, bob), key=str)


def test_a_membership_role_change_publishes_and_a_plain_save_does_not(
    heard, tenant, member
):
    membership = Membership.objects.get(tenant=tenant, user=member)

    membership.save()
    membership.role = Membership.Role.ADMIN
    membership.save()

    assert heard() == [
        PrincipalChanged(Kind.MEMBERSHIP_CHANGED, tenant=tenant.pk, user=member.pk)
    ]


def test_a_membership_moved_to_another_tenant_is_removed_from_the_first(
    heard, tenant, other_tenant, member
):
    membership = Membership.objects.get(tenant=tenant, user=member)

    membership.tenant = other_tenant
    membership.save()

    assert heard() == [
        PrincipalChanged(Kind.MEMBERSHIP_REMOVED, tenant=tenant.pk, user=member.pk),
        PrincipalChanged(
            Kind.MEMBERSHIP_CHANGED, tenant=other_tenant.pk, user=member.pk
        ),
    ]


def test_deleting_a_membership_publishes_it(heard, tenant, member):
    Membership.objects.get(tenant=tenant, user=member).delete()

    assert heard() == [
        PrincipalChanged(Kind.MEMBERSHIP_REMOVED, tenant=tenant.pk, user=member.pk)
    ]


def test_disabling_enabling_and_changing_a_tenant_publish(heard, tenant):
    """Kept principals carry the tenant row, so any saved change is news."""
    tenant.name = "Acme Corp"
    tenant.save()
    call_command("mcp_tenant", "disable", tenant.slug)
    tenant.refresh_from_db()
    tenant.save()
    tenant.is_active = True
    tenant.save(update_fields=["is_active"])

    assert heard() == [
        PrincipalChanged(Kind.TENANT_CHANGED, tenant=tenant.pk),
        PrincipalChanged(Kind.TENANT_DISABLED, tenant=tenant.pk),
        PrincipalChanged(Kind.TENANT_CHANGED, tenant=tenant.pk),
        PrincipalChanged(Kind.TENANT_ENABLED, tenant=tenant.pk),
    ]


def test_deleting_a_tenant_publishes_it_and_what_it_held(
    heard, tenant, member, issued_token
):
    pk, prefix = tenant.pk, issued_token.token.prefix

    tenant.delete()

    assert sorted(heard(), key=str) == sorted(
        [
            PrincipalChanged(Kind.TENANT_DELETED, tenant=pk),
            PrincipalChanged(Kind.MEMBERSHIP_REMOVED, tenant=pk, user=member.pk),
            PrincipalChanged(
                Kind.TOKEN_DELETED, tenant=pk, user=member.pk, token=prefix
            ),
        ],
        key=str,
    )


def test_a_change_rolled_back_publishes_nothing(heard, tenant, issued_token):
    with transaction.atomic():
        tokens.revoke(issued_token.token.prefix)
        Tenant.objects.get(pk=tenant.pk).delete()
        transaction.set_rollback(True)

    assert heard() == []
    assert ApiToken.objects.get(pk=issued_token.token.pk).revoked_at is None


def test_creating_rows_publishes_nothing(heard, tenant):
    user = User.objects.create_user("carol")
    tokens.issue(tenant, user)
    Tenant.objects.create(slug="initech", name="Initech")

    assert heard() == []


def test_every_catalog_change_publishes_the_new_version(tenant):
    bus.close()
    recorder = Recorder()
    bus.subscribe(bus.CatalogChanged, recorder)
    wait_listening()

    bookkeeping.expose(tenant, "demo.echo")
    bookkeeping.unexpose(tenant, "demo.echo")
    with transaction.atomic():
        bookkeeping.expose(tenant, "demo.add")
        transaction.set_rollback(True)
    bookkeeping.access_changed(tenant)

    bus.publish(bus.CatalogChanged(0, 0))

    recorder.wait_for(lambda e: e == bus.CatalogChanged(0, 0))
    tenant.refresh_from_db()
    assert tenant.catalog_version == 4
    assert recorder.of(bus.CatalogChanged) == [
        bus.CatalogChanged(tenant.pk, 2),
        bus.CatalogChanged(tenant.pk, 3),
        bus.CatalogChanged(tenant.pk, 4),
        bus.CatalogChanged(0, 0),
    ]
    bus.close()
