"""A catalog is one consistent snapshot, cached under the version it holds."""

from __future__ import annotations

from mcp_gateway import bookkeeping
from mcp_gateway.catalog import catalog_for, clear_cache
from mcp_gateway.models import Tenant


def test_a_change_between_the_two_reads_is_cached_under_its_own_version(
    tenant, django_assert_num_queries
):
    clear_cache()
    stale = Tenant.objects.get(pk=tenant.pk)  # as the request read it
    bookkeeping.expose(Tenant.objects.get(pk=tenant.pk), "demo.echo")

    catalog = catalog_for(stale)

    assert list(catalog) == ["demo_echo"]
    assert catalog.version == stale.catalog_version + 1
    fresh = Tenant.objects.get(pk=tenant.pk)
    with django_assert_num_queries(0):
        assert catalog_for(fresh) is catalog


def test_an_empty_catalog_carries_the_tenants_version(tenant):
    clear_cache()
    bookkeeping.expose(tenant, "demo.echo")
    bookkeeping.unexpose(tenant, "demo.echo")

    catalog = catalog_for(Tenant.objects.get(pk=tenant.pk))

    assert len(catalog) == 0
    assert catalog.version == tenant.catalog_version
