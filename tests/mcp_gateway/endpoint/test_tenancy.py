"""The tenant of a request, read at most once and only when asked."""

from __future__ import annotations

from mcp_gateway.endpoint.tenancy import TenantLookup


def test_nothing_is_read_until_asked(tenant, django_assert_num_queries):
    with django_assert_num_queries(0):
        lookup = TenantLookup(tenant.slug)
        assert lookup.loaded is None


def test_the_tenant_is_read_once(tenant, django_assert_num_queries):
    lookup = TenantLookup(tenant.slug)

    with django_assert_num_queries(1):
        assert lookup.get() == tenant
        assert lookup.get() == tenant
        assert lookup.loaded == tenant
        assert not lookup.missing


def test_an_inactive_or_unknown_tenant_is_missing(tenant):
    tenant.is_active = False
    tenant.save()

    assert TenantLookup(tenant.slug).missing
    assert TenantLookup("nobody").missing
    assert TenantLookup("nobody").get() is None
