"""Find the tenant of a request lazily, so the fast path pays no query.

An authenticated request learns its tenant from the credential's own query
(the auth backend joins it); only requests that need the tenant before
authentication (a browser's ``Origin``) or that are refused load it here.
"""

from __future__ import annotations

from mcp_gateway.compiled import CompiledSelect
from mcp_gateway.models import Tenant

_UNLOADED = object()
_active = CompiledSelect(
    lambda slug: Tenant.objects.filter(slug=slug, is_active=True), "slug"
)


class TenantLookup:
    def __init__(self, slug: str) -> None:
        self.slug = slug
        self._tenant: object = _UNLOADED

    def get(self) -> Tenant | None:
        """The active tenant with this slug, read at most once."""
        if self._tenant is _UNLOADED:
            self._tenant = _active.first(slug=self.slug)
        return self._tenant if isinstance(self._tenant, Tenant) else None

    @property
    def loaded(self) -> Tenant | None:
        """The tenant if it was read already, without a query."""
        return self._tenant if isinstance(self._tenant, Tenant) else None

    @property
    def missing(self) -> bool:
        """Whether there is no active tenant with this slug (reads it)."""
        return self.get() is None
