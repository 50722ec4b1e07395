from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection
from django.utils import timezone

from mcp_gateway.models import ApiToken, Exposure, Membership, Tenant


def exposure(tenant: Tenant, engine_id: str, tool: str) -> Exposure:
    return Exposure.objects.create(
        tenant=tenant,
        engine_id=engine_id,
        tool_name=tool,
        fingerprint="0" * 64,
        engine_version="1",
    )


def test_a_new_tenant_is_active_with_catalog_version_one(tenant):
    assert tenant.is_active is True
    assert tenant.catalog_version == 1
    assert tenant.allowed_origins == []
    assert tenant.engine_config == {}
    assert str(tenant) == "acme"


def test_tenant_slugs_are_unique(tenant):
    with pytest.raises(IntegrityError):
        Tenant.objects.create(slug="acme", name="Another")


def test_an_engine_is_exposed_once_per_tenant_by_construction(tenant):
    exposure(tenant, "demo.echo", "demo_echo")

    with pytest.raises(IntegrityError):
        exposure(tenant, "demo.echo", "other_name")


def test_a_tool_name_is_published_once_per_tenant_by_construction(tenant):
    exposure(tenant, "demo.echo", "demo_echo")

    with pytest.raises(IntegrityError):
        exposure(tenant, "demo:echo", "demo_echo")


def test_exposure_str_names_tool_and_engine(tenant):
    assert str(exposure(tenant, "demo.echo", "demo_echo")) == "demo_echo (demo.echo)"


def test_membership_is_unique_per_tenant_and_user(tenant, member):
    with pytest.raises(IntegrityError):
        Membership.objects.create(tenant=tenant, user=member)


def test_membership_defaults_to_member_role(tenant, member):
    membership = Membership.objects.get(tenant=tenant, user=member)

    assert membership.role == Membership.Role.MEMBER
    assert str(membership) == "alice in acme (member)"


def test_a_token_is_usable_until_revoked_or_expired(issued_token):
    row: ApiToken = issued_token.token

    assert row.is_usable is True
    row.expires_at = timezone.now() + timedelta(minutes=1)
    assert row.is_usable is True
    row.expires_at = timezone.now() - timedelta(seconds=1)
    assert row.is_usable is False
    row.expires_at = None
    row.revoked_at = timezone.now()
    assert row.is_usable is False


def test_token_str_shows_only_the_prefix(issued_token, token):
    text = str(issued_token.token)

    assert issued_token.token.prefix in text
    assert token not in text


def test_deleting_a_tenant_deletes_its_exposures_memberships_and_tokens(
    tenant, issued_token
):
    exposure(tenant, "demo.echo", "demo_echo")

    tenant.delete()

    assert not Exposure.objects.exists()
    assert not Membership.objects.exists()
    assert not ApiToken.objects.exists()


def test_the_database_is_the_one_database_url_names():
    url = os.environ.get("DATABASE_URL", "sqlite://")
    scheme = url.split(":", 1)[0]
    expected = {
        "sqlite": "sqlite",
        "postgres": "postgresql",
        "postgresql": "postgresql",
    }

    assert connection.vendor == expected.get(scheme, scheme)
