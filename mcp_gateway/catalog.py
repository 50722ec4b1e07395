"""A tenant's tools: tool name → (engine, MCP ``Tool``), cached per version.

The tenant row (read with each request) carries ``catalog_version``, which
every exposure change bumps, so a cache keyed by it is never stale; a process
only has to bound how many versions it remembers. A catalog is built from one
statement that reads the version together with the exposures, so it is a
consistent snapshot and is cached under the version it actually holds, even
when a change commits between the request's first read and this one.

Drift: an exposure whose engine's installed definition differs from the one
staff approved (its fingerprint) is held, neither listed nor callable, until
staff approve it again; under ``DRIFT_POLICY = "serve"`` it is served with
the new definition. Each process decides from its own engine code, so in a
rolling deploy old workers keep serving while new ones hold. The first time
a process finds an exposure drifted it records that through the bookkeeping
service (one event, one catalog version bump).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import mcp_types as types
from django.db import DatabaseError, connections, router, transaction
from django.dispatch import Signal

from engines_app.errors import InvalidEngineError
from engines_app.registry import EngineRegistry, default_registry, validate_engine
from mcp_gateway.conf import DRIFT_SERVE, gateway_settings
from mcp_gateway.fingerprint import fingerprint
from mcp_gateway.models import Exposure, Tenant
from mcp_gateway.observability import metrics
from mcp_gateway.runtime.adapter import InvalidToolError, build_tool

logger = logging.getLogger("mcp_gateway")

drift_found = Signal()
"""Sent (``tenant``, ``engine_ids``) when this process first finds a tenant's
exposures drifted; the bookkeeping layer records it (``signals.connect``),
and a receiver's ``DatabaseError`` leaves it to be sent at the next build."""

CACHE_SIZE = 2048


@dataclass(frozen=True)
class CatalogEntry:
    engine: Any
    tool: types.Tool
    groups: frozenset[str] = frozenset()
    """Names of the groups the tool is restricted to; empty: every member."""
    confirm: bool = False
    """Staff marked the exposure "requires confirmation": the gateway asks
    before the engine runs (``dispatch.approval``)."""

    def visible_to(self, groups: frozenset[str]) -> bool:
        return not self.groups or not self.groups.isdisjoint(groups)


@dataclass(frozen=True)
class Catalog:
    """The tools a tenant exposes, ordered by tool name."""

    entries: Mapping[str, CatalogEntry]
    version: int = 0
    """The tenant's catalog version this catalog was built from."""
    drifted: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """(engine id, installed fingerprint) of exposures whose definition
    differs from the approved one."""
    held: bool = field(default=True, compare=False)
    """Whether the drifted exposures were left out (policy "hold")."""

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
    _note_drift(tenant, catalog)
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
        _drift_seen.clear()


_drift_seen: set[tuple[Any, str, str]] = set()
"""(tenant pk, engine id, installed fingerprint) this process recorded."""
_started = threading.Event()
"""Set once this process logged its held exposures at its first build."""


def _note_drift(tenant: Tenant, catalog: Catalog) -> None:
    """Record, once per process, the exposures found newly drifted; log the
    held exposures of every tenant when this process builds its first
    catalog (system checks do not run under gunicorn or uvicorn)."""
    _log_held_once()
    if not catalog.drifted:
        return
    new = [
        (tenant.pk, engine_id, print_)
        for engine_id, print_ in catalog.drifted
        if (tenant.pk, engine_id, print_) not in _drift_seen
    ]
    if not new:
        return
    engine_ids = [engine_id for _pk, engine_id, _print in new]
    held = catalog.held
    logger.warning(
        "Tenant %s: the definition of %s changed since staff approved it; %s.",
        tenant,
        ", ".join(repr(engine_id) for engine_id in engine_ids),
        "held until approved" if held else "served as changed (DRIFT_POLICY serve)",
    )
    try:
        drift_found.send(sender=Catalog, tenant=tenant, engine_ids=engine_ids)
    except DatabaseError:
        # Holding does not depend on the record: serve (or hold) anyway,
        # and try to record again at the next build.
        logger.exception("Tenant %s: could not record the drift", tenant)
        return
    with _lock:
        _drift_seen.update(new)


def log_held_at_start() -> None:
    """Log the held exposures as the process starts (the WSGI and ASGI
    guards call this), so that its first request does not: the query reads
    every tenant's exposures, a million rows at 10,000 tenants of 100. It
    runs in a thread of its own whose connections are closed after it, so
    no connection is left open in the caller (a server may fork after this,
    ``gunicorn --preload``) and none is made on a running event loop. A
    database not reachable (or not migrated) yet defers it to the first
    catalog build."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(_log_held_in_thread).result()


def _log_held_in_thread() -> None:
    try:
        _log_held_once(retry=True)
    finally:
        connections.close_all()  # this thread's own


def _log_held_once(*, retry: bool = False) -> None:
    """:func:`log_held` once per process. Failing at the start (``retry``)
    leaves it to the first catalog build; failing there, it is not tried
    again (each build would pay the whole read)."""
    if _started.is_set():
        return
    _started.set()
    try:
        log_held()
    except DatabaseError:
        if retry:
            _started.clear()
            logger.info("Held exposures will be logged at the first catalog build.")
        else:
            logger.exception("Could not read the held exposures to log them")


def log_held(registry: EngineRegistry | None = None) -> int:
    """Log each exposure whose definition changed since its approval, as a
    warning; returns how many there are. One query, its rows read in chunks
    and unsorted (only the held ones are kept, and sorted)."""
    registry = default_registry if registry is None else registry
    prints = {engine.id: _fingerprint(engine) for engine in registry}
    alias = router.db_for_read(Exposure)
    # In a transaction of its own (a savepoint inside a request's): the
    # chunked read's cursor is not held past it (a pooler in transaction
    # mode), and a failure leaves the caller's transaction usable.
    with transaction.atomic(using=alias):
        rows = (
            Exposure.objects.using(alias)
            .filter(engine_id__in=list(prints))
            .order_by()
            .values_list("tenant__slug", "engine_id", "fingerprint")
            .iterator(chunk_size=2000)
        )
        drifted = sorted(
            (slug, e) for slug, e, fp in rows if prints[e] not in (None, fp)
        )
    verb = "held until staff approve it" if _holds() else "served as changed"
    for slug, engine_id in drifted:
        logger.warning(
            "Tenant %s: engine %r changed since it was approved; %s "
            "(python manage.py mcp_approve %s %s).",
            slug,
            engine_id,
            verb,
            slug,
            engine_id,
        )
    return len(drifted)


def _holds() -> bool:
    return gateway_settings().DRIFT_POLICY != DRIFT_SERVE


def _fingerprint(engine: Any) -> str | None:
    try:
        return fingerprint(engine)
    except Exception:  # an engine too broken to hash is never served anyway
        return None


def build_catalog(tenant: Tenant, registry: EngineRegistry) -> Catalog:
    """Build the catalog from the tenant's exposures: exactly one query."""
    entries: dict[str, CatalogEntry] = {}
    drifted: list[tuple[str, str]] = []
    hold = _holds()
    version, exposed = _exposed(tenant)
    for engine_id, (approved, groups, confirm) in exposed.items():
        entry = _entry(tenant, registry, engine_id, groups, confirm)
        if entry is None:
            continue
        installed = fingerprint(entry.engine)
        if installed != approved:
            drifted.append((engine_id, installed))
            if hold:
                continue  # held: answered as an unknown tool until approved
        if _is_new(tenant, entries, entry):
            entries[entry.tool.name] = entry
    ordered = {name: entries[name] for name in sorted(entries)}
    return Catalog(
        MappingProxyType(ordered), version, drifted=tuple(drifted), held=hold
    )


def _exposed(
    tenant: Tenant,
) -> tuple[int, dict[str, tuple[str, frozenset[str], bool]]]:
    """The catalog version, and engine id → (approved fingerprint, names of
    the groups it is restricted to, requires confirmation): one statement,
    so all come from one snapshot."""
    rows = list(
        Tenant.objects.filter(pk=tenant.pk)
        .order_by("exposures__engine_id")
        .values_list(
            "catalog_version",
            "exposures__engine_id",
            "exposures__fingerprint",
            "exposures__groups__name",
            "exposures__requires_confirmation",
        )
    )
    version = rows[0][0] if rows else tenant.catalog_version
    exposed: dict[str, tuple[str, set[str], bool]] = {}
    for _, engine_id, approved, group, confirm in rows:
        if engine_id is None:
            continue  # no exposure at all: the one row only carries the version
        _approved, names, _confirm = exposed.setdefault(
            engine_id, (approved, set(), bool(confirm))
        )
        if group is not None:
            names.add(group)
    return version, {
        engine_id: (approved, frozenset(names), confirm)
        for engine_id, (approved, names, confirm) in exposed.items()
    }


def _entry(
    tenant: Tenant,
    registry: EngineRegistry,
    engine_id: str,
    groups: frozenset[str],
    confirm: bool = False,
) -> CatalogEntry | None:
    engine = registry.get(engine_id)
    if engine is None:
        return None  # stale: shown in the admin, never served
    try:
        validate_engine(engine)
        tool = build_tool(engine)
        return CatalogEntry(engine=engine, tool=tool, groups=groups, confirm=confirm)
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
