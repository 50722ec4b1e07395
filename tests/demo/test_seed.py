"""``mcp_seed``: bulk filler tenants for the scale benchmark (the demo app's)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from engines_app.registry import default_registry
from mcp_gateway.audit.models import ExposureEvent
from mcp_gateway.models import Exposure, Tenant


def test_seeding_creates_tenants_each_exposing_the_first_engines(db):
    call_command("mcp_seed", "--tenants", "3", "--exposures", "2")

    slugs = list(Tenant.objects.values_list("slug", flat=True))
    first_two = [engine.id for engine in default_registry][:2]
    exposed = Exposure.objects.filter(tenant__slug="seed-00001")
    assert slugs == ["seed-00000", "seed-00001", "seed-00002"]
    assert sorted(exposed.values_list("engine_id", flat=True)) == first_two
    assert Exposure.objects.count() == 6


def test_seeding_goes_through_bookkeeping(db):
    """Each new tenant gets a version bump and an exposure event."""
    call_command("mcp_seed", "--tenants", "2", "--exposures", "1")

    versions = set(Tenant.objects.values_list("catalog_version", flat=True))
    events = ExposureEvent.objects.order_by("tenant_slug")
    assert versions == {2}
    assert [(e.tenant_slug, e.action, e.via, e.catalog_version) for e in events] == [
        ("seed-00000", "expose", "command", 2),
        ("seed-00001", "expose", "command", 2),
    ]


def test_seeding_again_adds_only_the_missing_tenants(db):
    call_command("mcp_seed", "--tenants", "2", "--exposures", "1")

    call_command("mcp_seed", "--tenants", "3", "--exposures", "1")

    assert Tenant.objects.count() == 3
    assert Exposure.objects.count() == 3


def test_seeding_leaves_other_tenants_alone(tenant):
    version = tenant.catalog_version

    call_command("mcp_seed", "--tenants", "2", "--exposures", "1")

    tenant.refresh_from_db()
    assert tenant.catalog_version == version
    assert not tenant.exposures.exists()


def test_asking_for_more_exposures_than_engines_is_an_error(db):
    with pytest.raises(CommandError, match="engines are installed"):
        call_command("mcp_seed", "--tenants", "1", "--exposures", "100000")
