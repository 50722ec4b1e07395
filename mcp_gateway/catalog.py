"""A tenant's tools: tool name → (engine, MCP ``Tool``), cached per version.

The tenant row (read with each request) carries ``catalog_version``, which
every exposure change bumps, so a cache keyed by it is never stale; a process
only has to bound how many versions it remembers. A catalog is built from one
statement that reads the version together with the exposures, so it is a
consistent snapshot and is cached under the version it actually holds, even
when a change commits between the request's first read and this one.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import mcp_types as types

from engines_app.errors import InvalidEngineError
from engines_app.registry import EngineRegistry, default_registry, validate_engine
from mcp_gateway.models import Tenant
from mcp_gateway.observability import metrics
from mcp_gateway.runtime.adapter import InvalidToolError, build_tool

logger = logging.getLogger("mcp_gateway")

CACHE_SIZE = 2048


@dataclass(frozen=True)
class CatalogEntry:
    engine: Any
    tool: types.Tool
    groups: frozenset[str] = frozenset()
    """Names of the groups the tool is restricted to; empty: every member."""

    def visible_to(self, groups: frozenset[str]) -> bool:
        return not self.groups or not self.groups.isdisjoint(groups)


@dataclass(frozen=True)
class Catalog:
    """The tools a tenant exposes, ordered by tool name."""

    entries: Mapping[str, CatalogEntry]
    version: int = 0
    """The tenant's catalog version this catalog was built from."""

    def get(self, name: str) -> CatalogEntry | None:
        return self.entries.get(name)

    def tools(self) -> list[types.Tool]:
        return [entry.tool for entry in self.entries.values()]

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @functools.cached_property
    def restricted(self) -> bool:
        """True when some tool is restricted to groups (read per request)."""
        return any(entry.groups for entry in self.entries.values())

    def visible_to(self, groups: frozenset[str]) -> Catalog:
        """The tools a principal in ``groups`` may see (and so call)."""
        if not self.restricted:
            return self
        return Catalog(
            MappingProxyType(
                {n: e for n, e in self.entries.items() if e.visible_to(groups)}
            ),
            self.version,
        )


EMPTY = Catalog(MappingProxyType({}))

_CacheKey = tuple[Any, int, Any]
_cache: OrderedDict[_CacheKey, Catalog] = OrderedDict()
_lock = threading.Lock()


def catalog_for(tenant: Tenant, registry: EngineRegistry | None = None) -> Catalog:
    """Return ``tenant``'s catalog; builds it with one query on a cache miss."""
    if registry is not None:
        return build_catalog(tenant, registry)
    key: _CacheKey = (tenant.pk, tenant.catalog_version, tenant.created_at)
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
    if cached is not None:
        metrics.catalog_hit(tenant.slug)
        return cached
    metrics.catalog_built(tenant.slug)
    catalog = build_catalog(tenant, default_registry)
    with _lock:
        _cache[(tenant.pk, catalog.version, tenant.created_at)] = catalog
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return catalog


def cached(tenant: Tenant) -> Catalog | None:
    """``tenant``'s catalog when this process holds it; never builds one."""
    with _lock:
        return _cache.get((tenant.pk, tenant.catalog_version, tenant.created_at))


def clear_cache() -> None:
    """Forget every cached catalog (tests; a registry changed at run time)."""
    with _lock:
        _cache.clear()


def build_catalog(tenant: Tenant, registry: EngineRegistry) -> Catalog:
    """Build the catalog from the tenant's exposures: exactly one query."""
    entries: dict[str, CatalogEntry] = {}
    version, exposed = _exposed(tenant)
    for engine_id, groups in exposed.items():
        entry = _entry(tenant, registry, engine_id, groups)
        if entry is not None and _is_new(tenant, entries, entry):
            entries[entry.tool.name] = entry
    ordered = {name: entries[name] for name in sorted(entries)}
    return Catalog(MappingProxyType(ordered), version)


def _exposed(tenant: Tenant) -> tuple[int, dict[str, frozenset[str]]]:
    """The catalog version, and engine id → names of the groups it is
    restricted to: one statement, so both come from one snapshot."""
    rows = list(
        Tenant.objects.filter(pk=tenant.pk)
        .order_by("exposures__engine_id")
        .values_list(
            "catalog_version", "exposures__engine_id", "exposures__groups__name"
        )
    )
    version = rows[0][0] if rows else tenant.catalog_version
    exposed: dict[str, set[str]] = {}
    for _, engine_id, group in rows:
        if engine_id is None:
            continue  # no exposure at all: the one row only carries the version
        names = exposed.setdefault(engine_id, set())
        if group is not None:
            names.add(group)
    return version, {engine_id: frozenset(n) for engine_id, n in exposed.items()}


def _entry(
    tenant: Tenant, registry: EngineRegistry, engine_id: str, groups: frozenset[str]
) -> CatalogEntry | None:
    engine = registry.get(engine_id)
    if engine is None:
        return None  # stale: shown in the admin, never served
    try:
        validate_engine(engine)
        return CatalogEntry(engine=engine, tool=build_tool(engine), groups=groups)
    except (InvalidEngineError, InvalidToolError) as exc:
        logger.error("Tenant %s: engine %r not served: %s", tenant, engine_id, exc)
        return None


def _is_new(
    tenant: Tenant, entries: dict[str, CatalogEntry], entry: CatalogEntry
) -> bool:
    other = entries.get(entry.tool.name)
    if other is None:
        return True
    logger.error(
        "Tenant %s: engines %r and %r both derive tool %r; serving the first.",
        tenant,
        other.engine.id,
        entry.engine.id,
        entry.tool.name,
    )
    return False
