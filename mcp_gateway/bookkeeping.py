"""The one service that changes which engines a tenant exposes.

Every change runs in one transaction that locks the tenant row, so
concurrent changes to one tenant are serialized, and bumps the tenant's
catalog version, so every worker process sees the change on its next
request.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.db import IntegrityError, connections, transaction
from django.db.models import F
from django.utils import timezone

from engines_app.errors import InvalidEngineError
from engines_app.registry import EngineRegistry, default_registry, validate_engine
from mcp_gateway import bus, principals
from mcp_gateway.audit import log as audit
from mcp_gateway.conf import DRIFT_SERVE, gateway_settings
from mcp_gateway.errors import (
    DuplicateExposure,
    InvalidEngine,
    NotExposed,
    ToolNameCollision,
    UnknownEngine,
)
from mcp_gateway.fingerprint import definition, fingerprint
from mcp_gateway.models import Exposure, Tenant
from mcp_gateway.naming import tool_name

Actor = AbstractBaseUser | AnonymousUser | None
VIA_CODE = "code"
"""Where a change came from: ``admin``, ``api``, ``command`` or ``code``."""


LIVE, HELD, CHANGED, STALE = "live", "held", "changed", "stale"
STATUSES = (LIVE, HELD, CHANGED, STALE)
"""An exposure's status: served as approved; its engine's definition
changed and it waits for approval (``DRIFT_POLICY`` "hold"); changed and
served all the same ("serve"); its engine not installed."""


def holds_drift() -> bool:
    """Whether a changed tool waits for approval; anything but "serve" holds."""
    return gateway_settings().DRIFT_POLICY != DRIFT_SERVE


@dataclass(frozen=True)
class ExposureState:
    """An exposure as staff see it: live, held, changed or stale."""

    exposure: Exposure
    stale: bool
    changed: bool
    """The installed definition differs from the approved one."""
    engine: Any = None

    @property
    def status(self) -> str:
        if self.stale:
            return STALE
        if self.changed:
            return HELD if holds_drift() else CHANGED
        return LIVE

    @property
    def installed_definition(self) -> dict[str, Any] | None:
        return None if self.engine is None else definition(self.engine)

    def diff(self) -> list[tuple[str, Any, Any]]:
        """(field, approved, installed) for each field that differs; the
        approved side is ``None`` throughout when it is unknown."""
        if not self.changed or self.engine is None:
            return []
        old = self.exposure.approved_definition or {}
        new = definition(self.engine)
        return [
            (key, old.get(key), new.get(key))
            for key in new
            if not old or old.get(key) != new.get(key)
        ]


@dataclass(frozen=True)
class Skipped:
    engine_id: str
    reason: str


@dataclass(frozen=True)
class ExposeAllResult:
    """What ``expose_all`` exposed, and what it left out and why."""

    exposed: list[Exposure]
    skipped: list[Skipped]


def expose(
    tenant: Tenant,
    engine_id: str,
    *,
    by: Actor = None,
    registry: EngineRegistry | None = None,
    via: str = VIA_CODE,
    requires_confirmation: bool = False,
) -> Exposure:
    """Expose one engine to ``tenant``.

    Raises:
        UnknownEngine, InvalidEngine, DuplicateExposure, ToolNameCollision.
    """
    return expose_many(
        tenant,
        [engine_id],
        by=by,
        registry=registry,
        via=via,
        requires_confirmation=requires_confirmation,
    )[0]


def expose_many(
    tenant: Tenant,
    engine_ids: Sequence[str],
    *,
    by: Actor = None,
    registry: EngineRegistry | None = None,
    via: str = VIA_CODE,
    action: str = "expose",
    requires_confirmation: bool = False,
) -> list[Exposure]:
    """Expose several engines: all of them or, on any error, none.

    With ``requires_confirmation`` the rows are created marked, in the same
    transaction: one catalog version bump, no moment a listener could call
    a new tool unconfirmed, and a "confirmation" event beside the exposure's.
    """
    registry = _or_default(registry)
    engines = [_installed(registry, engine_id) for engine_id in engine_ids]
    try:
        with transaction.atomic():
            _lock(tenant)
            created = _create(tenant, engines, by, requires_confirmation)
            _bump(tenant)
            audit.record_change(tenant, action, engine_ids, by=by, via=via)
            if requires_confirmation and engine_ids:
                audit.record_change(tenant, "confirmation", engine_ids, by=by, via=via)
    except IntegrityError as exc:  # a concurrent change won the race
        raise _explain_integrity_error(tenant, engines) from exc
    return created


def expose_all(
    tenant: Tenant,
    *,
    by: Actor = None,
    registry: EngineRegistry | None = None,
    via: str = VIA_CODE,
    requires_confirmation: bool = False,
) -> ExposeAllResult:
    """Expose every installed engine not yet exposed; idempotent and atomic.

    An engine that cannot be exposed is skipped with the reason: it is
    invalid, or its tool name is taken by an exposed engine, or another
    engine not exposed yet derives the same name (staff choose one). With
    ``requires_confirmation`` the new rows are created marked, as in
    :func:`expose_many`.
    """
    registry = _or_default(registry)
    with transaction.atomic():
        _lock(tenant)
        taken = dict(tenant.exposures.values_list("tool_name", "engine_id"))
        exposed = set(taken.values())
        candidates = [engine for engine in registry if engine.id not in exposed]
        ids_by_name: dict[str, list[str]] = {}
        for engine in candidates:
            ids_by_name.setdefault(tool_name(engine.id), []).append(engine.id)
        new_ids, skipped = [], []
        for engine in candidates:
            reason = _skip_reason(registry, engine.id, taken, ids_by_name)
            if reason:
                skipped.append(Skipped(engine.id, reason))
            else:
                new_ids.append(engine.id)
        created = (
            expose_many(
                tenant,
                new_ids,
                by=by,
                registry=registry,
                via=via,
                action="expose_all",
                requires_confirmation=requires_confirmation,
            )
            if new_ids
            else []
        )
    return ExposeAllResult(created, skipped)


def _skip_reason(
    registry: EngineRegistry,
    engine_id: str,
    taken: dict[str, str],
    ids_by_name: dict[str, list[str]],
) -> str:
    try:
        _installed(registry, engine_id)
    except InvalidEngine as exc:
        return exc.message
    name = tool_name(engine_id)
    if name in taken:
        return (
            f"Engine {engine_id!r} derives the tool name {name!r}, which the "
            f"exposed engine {taken[name]!r} already has."
        )
    others = [other for other in ids_by_name[name] if other != engine_id]
    if others:
        listed = ", ".join(repr(other) for other in others)
        return (
            f"Engine {engine_id!r} and {listed} both derive the tool name "
            f"{name!r}; expose one of them by hand."
        )
    return ""


def unexpose(
    tenant: Tenant, engine_id: str, *, by: Actor = None, via: str = VIA_CODE
) -> bool:
    """Remove one exposure; ``False`` when there was none."""
    return unexpose_many(tenant, [engine_id], by=by, via=via) == 1


def unexpose_many(
    tenant: Tenant, engine_ids: Iterable[str], *, by: Actor = None, via: str = VIA_CODE
) -> int:
    with transaction.atomic():
        _lock(tenant)
        exposures = tenant.exposures.filter(engine_id__in=list(engine_ids))
        removed = list(exposures.values_list("engine_id", flat=True))
        deleted, _ = exposures.delete()
        if deleted:
            _bump(tenant)
            audit.record_change(tenant, "unexpose", removed, by=by, via=via)
    return len(removed) if deleted else 0


def clear(tenant: Tenant, *, by: Actor = None, via: str = VIA_CODE) -> int:
    """Remove every exposure of ``tenant``; returns how many there were."""
    with transaction.atomic():
        _lock(tenant)
        removed = list(tenant.exposures.values_list("engine_id", flat=True))
        deleted, _ = tenant.exposures.all().delete()
        if deleted:
            _bump(tenant)
            audit.record_change(tenant, "clear", removed, by=by, via=via)
    return len(removed) if deleted else 0


def reconcile(tenant: Tenant, registry: EngineRegistry | None = None) -> list[Exposure]:
    """Report the exposures whose engine is no longer installed."""
    registry = _or_default(registry)
    return [e for e in tenant.exposures.all() if e.engine_id not in registry]


def states(
    exposures: Iterable[Exposure], registry: EngineRegistry | None = None
) -> list[ExposureState]:
    """Classify exposures as staff see them: live, held, changed, stale."""
    registry = _or_default(registry)
    result = []
    for exposure in exposures:
        engine = registry.get(exposure.engine_id)
        changed = engine is not None and fingerprint(engine) != exposure.fingerprint
        result.append(ExposureState(exposure, engine is None, changed, engine))
    return result


def state_of(exposure: Exposure, registry: EngineRegistry | None = None) -> str:
    return states([exposure], registry)[0].status


def approve(
    tenant: Tenant,
    engine_ids: Sequence[str] | None = None,
    *,
    by: Actor = None,
    registry: EngineRegistry | None = None,
    via: str = VIA_CODE,
) -> list[Exposure]:
    """Approve the installed definition of exposed engines: the named ones
    (each must be exposed and installed), or with ``None`` every changed one.

    One transaction, one catalog version bump, one "approve" event; an
    exposure whose definition did not change is approved again harmlessly.

    Raises:
        UnknownEngine, InvalidEngine, NotExposed.
    """
    registry = _or_default(registry)
    with transaction.atomic():
        _lock(tenant)
        exposures = {e.engine_id: e for e in tenant.exposures.all()}
        if engine_ids is None:
            found = states(exposures.values(), registry)
            chosen = [s.exposure for s in found if s.changed]
        else:
            chosen = []
            for engine_id in dict.fromkeys(engine_ids):
                if engine_id not in exposures:
                    raise NotExposed(tenant.slug, engine_id)
                chosen.append(exposures[engine_id])
        if not chosen:
            return []
        for exposure in chosen:
            engine = _installed(registry, exposure.engine_id)
            exposure.fingerprint = fingerprint(engine)
            exposure.engine_version = engine.version
            exposure.approved_definition = definition(engine)
        Exposure.objects.bulk_update(
            chosen, ["fingerprint", "engine_version", "approved_definition"]
        )
        _bump(tenant)
        audit.record_change(
            tenant, "approve", [e.engine_id for e in chosen], by=by, via=via
        )
    return chosen


def record_drift(tenant: Tenant, engine_ids: Sequence[str]) -> None:
    """Record that this process found the definitions of ``engine_ids``
    changed: one "drift" event, and a catalog version bump so listeners
    learn that the tenant's tool list changed."""
    with transaction.atomic():
        _lock(tenant)
        _bump(tenant)
        audit.record_change(tenant, "drift", engine_ids, by=None, via=VIA_CODE)


def restrict(exposure: Exposure, groups: Iterable[Group]) -> Exposure:
    """Restrict the tool to members of ``groups``; none: every member."""
    with transaction.atomic():
        _lock(exposure.tenant)
        exposure.groups.set(list(groups))
        _bump(exposure.tenant)
    return exposure


def require_confirmation(
    exposure: Exposure, required: bool, *, by: Actor = None, via: str = VIA_CODE
) -> Exposure:
    """Mark the tool "requires confirmation" (or not): one event, one
    catalog version bump; nothing when it is already so."""
    with transaction.atomic():
        _lock(exposure.tenant)
        changed = Exposure.objects.filter(pk=exposure.pk).exclude(
            requires_confirmation=required
        )
        if changed.update(requires_confirmation=required):
            _bump(exposure.tenant)
            audit.record_change(
                exposure.tenant, "confirmation", [exposure.engine_id], by=by, via=via
            )
    exposure.requires_confirmation = required
    return exposure


def access_changed(tenant: Tenant) -> None:
    """Record a change to the tenant's access rules (authorization servers).

    Bumps the catalog version like every exposure change, so each worker
    drops what it derived from the old rules on its next request.
    """
    with transaction.atomic():
        _lock(tenant)
        _bump(tenant)


SEED_BATCH_SIZE = 2000


def create_exposed(
    slugs: Sequence[str],
    engine_ids: Sequence[str],
    *,
    by: Actor = None,
    registry: EngineRegistry | None = None,
    via: str = VIA_CODE,
) -> list[Tenant]:
    """Create new tenants, each exposing the same engines: the bulk path.

    For filler tenants by the thousand (the scale benchmark's seeding),
    with every rule of :func:`expose_many`: one transaction; the new rows
    locked; each engine installed and valid, no engine twice and no two
    deriving one tool name (checked once: every tenant gets the same set);
    the exposures written in batches (PostgreSQL ``COPY``); each tenant's
    catalog version bumped; one exposure event per tenant. No
    ``CatalogChanged`` is published: no process can hold the catalog of a
    tenant that did not exist.

    Raises:
        UnknownEngine, InvalidEngine, DuplicateExposure, ToolNameCollision;
        IntegrityError: a slug is taken (nothing is created).
    """
    registry = _or_default(registry)
    engines = [_installed(registry, engine_id) for engine_id in engine_ids]
    _check_distinct(slugs[0] if slugs else "", engines)
    now = timezone.now()
    with transaction.atomic():
        Tenant.objects.bulk_create(
            [Tenant(slug=slug, name=slug, created_at=now) for slug in slugs],
            batch_size=SEED_BATCH_SIZE,
        )
        tenants = list(
            Tenant.objects.select_for_update().filter(slug__in=slugs).order_by("pk")
        )
        _write_exposures(_seed_rows(tenants, engines, audit.acting_user(by), now))
        Tenant.objects.filter(pk__in=[t.pk for t in tenants]).update(
            catalog_version=F("catalog_version") + 1
        )
        for tenant in tenants:
            tenant.catalog_version += 1
        audit.record_changes(tenants, "expose", engine_ids, by=by, via=via)
    return tenants


def _check_distinct(slug: str, engines: Sequence[Any]) -> None:
    taken: dict[str, str] = {}
    for engine in engines:
        name = tool_name(engine.id)
        if engine.id in taken.values():
            raise DuplicateExposure(slug, engine.id)
        if name in taken:
            raise ToolNameCollision(name, engine.id, taken[name])
        taken[name] = engine.id


_SeedRow = tuple[int, str, str, str, str, Any, datetime, bool]
_SEED_COLUMNS = (
    "tenant_id",
    "engine_id",
    "tool_name",
    "fingerprint",
    "engine_version",
    "exposed_by_id",
    "created_at",
    "requires_confirmation",
)


def _seed_rows(
    tenants: Iterable[Tenant], engines: Sequence[Any], actor: Any, now: datetime
) -> Iterator[_SeedRow]:
    columns = [(e.id, tool_name(e.id), fingerprint(e), e.version) for e in engines]
    actor_id = actor.pk if actor is not None else None
    for tenant in tenants:
        for engine_id, name, digest, version in columns:
            yield (tenant.pk, engine_id, name, digest, version, actor_id, now, False)


def _write_exposures(rows: Iterable[_SeedRow]) -> None:
    """Insert exposure rows in bulk: ``COPY`` on PostgreSQL, batches elsewhere."""
    connection = connections[Exposure.objects.db]
    if connection.vendor == "postgresql":
        quote = connection.ops.quote_name
        table = quote(Exposure._meta.db_table)
        columns = ", ".join(quote(column) for column in _SEED_COLUMNS)
        with connection.cursor() as cursor:
            raw = cursor.cursor  # psycopg's own cursor: COPY is not in the DB-API
            with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        return
    batch: list[Exposure] = []
    for row in rows:
        batch.append(Exposure(**dict(zip(_SEED_COLUMNS, row, strict=True))))
        if len(batch) >= SEED_BATCH_SIZE:
            Exposure.objects.bulk_create(batch)
            batch = []
    Exposure.objects.bulk_create(batch)


def _or_default(registry: EngineRegistry | None) -> EngineRegistry:
    # Not ``registry or default``: an empty registry is falsy but still chosen.
    return default_registry if registry is None else registry


def _installed(registry: EngineRegistry, engine_id: str) -> Any:
    engine = registry.get(engine_id)
    if engine is None:
        raise UnknownEngine(engine_id)
    try:
        validate_engine(engine)
    except InvalidEngineError as exc:
        raise InvalidEngine(str(exc)) from exc
    return engine


def _lock(tenant: Tenant) -> None:
    Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list("pk").first()


def _bump(tenant: Tenant) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(catalog_version=F("catalog_version") + 1)
    tenant.refresh_from_db(fields=["catalog_version"])
    changed = bus.CatalogChanged(tenant.pk, tenant.catalog_version)
    principals.forget(changed)  # the kept tenant row holds the old version
    bus.publish(changed)


def _create(
    tenant: Tenant, engines: list[Any], by: Actor, confirm: bool
) -> list[Exposure]:
    taken = dict(tenant.exposures.values_list("tool_name", "engine_id"))
    rows = []
    for engine in engines:
        name = tool_name(engine.id)
        if engine.id in taken.values():
            raise DuplicateExposure(tenant.slug, engine.id)
        if name in taken:
            raise ToolNameCollision(name, engine.id, taken[name])
        taken[name] = engine.id
        rows.append(_exposure(tenant, engine, name, by, confirm))
    return Exposure.objects.bulk_create(rows)


def _exposure(
    tenant: Tenant, engine: Any, name: str, by: Actor, confirm: bool
) -> Exposure:
    return Exposure(
        tenant=tenant,
        engine_id=engine.id,
        tool_name=name,
        fingerprint=fingerprint(engine),
        engine_version=engine.version,
        approved_definition=definition(engine),
        exposed_by=audit.acting_user(by),
        requires_confirmation=confirm,
    )


def _explain_integrity_error(tenant: Tenant, engines: list[Any]) -> Exception:
    exposed = dict(tenant.exposures.values_list("engine_id", "tool_name"))
    for engine in engines:
        if engine.id in exposed:
            return DuplicateExposure(tenant.slug, engine.id)
    by_name = {name: engine_id for engine_id, name in exposed.items()}
    for engine in engines:
        other = by_name.get(tool_name(engine.id))
        if other is not None:
            return ToolNameCollision(tool_name(engine.id), engine.id, other)
    return DuplicateExposure(tenant.slug, engines[0].id if engines else "")
