from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import IntegrityError, connection

from demo import basic
from engines_app.engine import FunctionEngine
from engines_app.registry import default_registry
from mcp_gateway import bookkeeping
from mcp_gateway.audit.models import ExposureEvent
from mcp_gateway.errors import (
    DuplicateExposure,
    InvalidEngine,
    NotExposed,
    ToolNameCollision,
    UnknownEngine,
)
from mcp_gateway.fingerprint import definition, fingerprint
from mcp_gateway.models import Exposure, Tenant
from tests.engines import ColonEcho


def version(tenant: Tenant) -> int:
    tenant.refresh_from_db(fields=["catalog_version"])
    return tenant.catalog_version


def test_expose_creates_the_row_and_bumps_the_catalog_version(tenant, staff):
    before = version(tenant)

    exposure = bookkeeping.expose(tenant, "demo.echo", by=staff)

    exposure.refresh_from_db()
    assert exposure.tenant == tenant
    assert exposure.engine_id == "demo.echo"
    assert exposure.tool_name == "demo_echo"
    assert exposure.fingerprint == fingerprint(default_registry.get("demo.echo"))
    assert exposure.engine_version == "1.0.0"
    assert exposure.exposed_by == staff
    assert version(tenant) == before + 1
    assert tenant.catalog_version == before + 1


def test_expose_without_an_actor_records_nobody(tenant):
    exposure = bookkeeping.expose(tenant, "demo.add")

    assert exposure.exposed_by is None


def test_exposing_twice_is_a_duplicate_and_adds_no_row(tenant):
    bookkeeping.expose(tenant, "demo.echo")
    before = version(tenant)

    with pytest.raises(DuplicateExposure, match=r"demo\.echo") as info:
        bookkeeping.expose(tenant, "demo.echo")

    assert info.value.engine_id == "demo.echo"
    assert info.value.code == "duplicate_exposure"
    assert Exposure.objects.filter(tenant=tenant).count() == 1
    assert version(tenant) == before


def test_the_same_engine_may_be_exposed_to_two_tenants(tenant, other_tenant):
    bookkeeping.expose(tenant, "demo.echo")
    bookkeeping.expose(other_tenant, "demo.echo")

    assert Exposure.objects.filter(engine_id="demo.echo").count() == 2


def test_exposing_an_unknown_engine_changes_nothing(tenant):
    before = version(tenant)

    with pytest.raises(UnknownEngine, match=r"no\.such") as info:
        bookkeeping.expose(tenant, "no.such")

    assert info.value.engine_id == "no.such"
    assert not Exposure.objects.exists()
    assert version(tenant) == before


def test_a_tool_name_collision_names_both_engines(tenant):
    bookkeeping.expose(tenant, "demo.echo")
    before = version(tenant)

    with pytest.raises(ToolNameCollision) as info:
        bookkeeping.expose(tenant, "demo:echo")

    assert set(info.value.engine_ids) == {"demo.echo", "demo:echo"}
    assert info.value.tool_name == "demo_echo"
    assert "demo.echo" in str(info.value)
    assert "demo:echo" in str(info.value)
    assert list(tenant.exposures.values_list("engine_id", flat=True)) == ["demo.echo"]
    assert version(tenant) == before


def test_expose_many_exposes_all_of_them(tenant):
    created = bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])

    assert [e.engine_id for e in created] == ["demo.echo", "demo.add"]
    assert tenant.exposures.count() == 2


@pytest.mark.parametrize(
    ("engine_ids", "error"),
    [
        (["demo.add", "no.such"], UnknownEngine),
        (["demo.add", "demo.echo", "demo:echo"], ToolNameCollision),
        (["demo.add", "demo.add"], DuplicateExposure),
    ],
)
def test_expose_many_is_all_or_nothing(tenant, engine_ids, error):
    before = version(tenant)

    with pytest.raises(error):
        bookkeeping.expose_many(tenant, engine_ids)

    assert not tenant.exposures.exists()
    assert version(tenant) == before


def test_expose_all_exposes_every_installed_engine(tenant, registry):
    registry.register(basic.Echo())
    registry.register(basic.Add())

    result = bookkeeping.expose_all(tenant, registry=registry)

    assert [e.engine_id for e in result.exposed] == ["demo.add", "demo.echo"]
    assert result.skipped == []


def test_expose_all_is_idempotent(tenant, registry):
    registry.register(basic.Echo())
    registry.register(basic.Add())
    bookkeeping.expose(tenant, "demo.add", registry=registry)
    bookkeeping.expose_all(tenant, registry=registry)
    before = version(tenant)

    again = bookkeeping.expose_all(tenant, registry=registry)

    assert again == bookkeeping.ExposeAllResult([], [])
    assert version(tenant) == before
    assert tenant.exposures.count() == 2


def test_expose_all_on_an_empty_registry_exposes_nothing(tenant, registry):
    before = version(tenant)

    assert bookkeeping.expose_all(tenant, registry=registry).exposed == []

    assert not tenant.exposures.exists()
    assert version(tenant) == before


def test_expose_all_exposes_the_rest_and_skips_colliding_engines(tenant, registry):
    for engine in (basic.Echo(), basic.Add(), ColonEcho()):
        registry.register(engine)
    before = version(tenant)

    result = bookkeeping.expose_all(tenant, registry=registry)

    assert [e.engine_id for e in result.exposed] == ["demo.add"]
    assert [s.engine_id for s in result.skipped] == ["demo.echo", "demo:echo"]
    assert "both derive the tool name 'demo_echo'" in result.skipped[0].reason
    assert list(tenant.exposures.values_list("engine_id", flat=True)) == ["demo.add"]
    assert version(tenant) == before + 1


def test_expose_all_skips_an_engine_whose_tool_name_is_taken(tenant, registry):
    for engine in (basic.Echo(), ColonEcho()):
        registry.register(engine)
    bookkeeping.expose(tenant, "demo:echo", registry=registry)

    result = bookkeeping.expose_all(tenant, registry=registry)

    assert result.exposed == []
    assert [s.engine_id for s in result.skipped] == ["demo.echo"]
    assert "exposed engine 'demo:echo'" in result.skipped[0].reason


def test_expose_all_skips_an_invalid_engine_with_the_reason(tenant, registry):
    broken = FunctionEngine("x.broken", "Broken", "Will break.", lambda c: None)
    registry.register(broken)
    registry.register(basic.Add())
    object.__setattr__(broken, "description", "")

    result = bookkeeping.expose_all(tenant, registry=registry)

    assert [e.engine_id for e in result.exposed] == ["demo.add"]
    assert [s.engine_id for s in result.skipped] == ["x.broken"]
    assert "description" in result.skipped[0].reason


def test_unexpose_removes_the_exposure_and_bumps(tenant):
    bookkeeping.expose(tenant, "demo.echo")
    before = version(tenant)

    removed = bookkeeping.unexpose(tenant, "demo.echo")

    assert removed is True
    assert not tenant.exposures.exists()
    assert version(tenant) == before + 1


def test_unexposing_what_is_not_exposed_returns_false_without_a_bump(tenant):
    before = version(tenant)

    removed = bookkeeping.unexpose(tenant, "demo.echo")

    assert removed is False
    assert version(tenant) == before


def test_unexpose_touches_only_its_tenant(tenant, other_tenant):
    bookkeeping.expose(tenant, "demo.echo")
    bookkeeping.expose(other_tenant, "demo.echo")
    before = version(other_tenant)

    bookkeeping.unexpose(tenant, "demo.echo")

    assert other_tenant.exposures.count() == 1
    assert version(other_tenant) == before


def test_clear_removes_every_exposure_and_bumps_once(tenant):
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    before = version(tenant)

    removed = bookkeeping.clear(tenant)

    assert removed == 2
    assert not tenant.exposures.exists()
    assert version(tenant) == before + 1


def test_clearing_an_empty_tenant_does_not_bump(tenant):
    before = version(tenant)

    assert bookkeeping.clear(tenant) == 0

    assert version(tenant) == before


def stale_exposure(tenant: Tenant, engine_id: str = "gone.engine") -> Exposure:
    return Exposure.objects.create(
        tenant=tenant,
        engine_id=engine_id,
        tool_name=engine_id.replace(".", "_"),
        fingerprint="0" * 64,
        engine_version="1.0.0",
    )


def test_reconcile_reports_exposures_whose_engine_is_gone(tenant):
    bookkeeping.expose(tenant, "demo.echo")
    gone = stale_exposure(tenant)

    assert bookkeeping.reconcile(tenant) == [gone]


def test_reconcile_with_a_custom_registry(tenant, registry):
    bookkeeping.expose(tenant, "demo.echo")

    stale = bookkeeping.reconcile(tenant, registry)

    assert [e.engine_id for e in stale] == ["demo.echo"]


def test_states_flag_stale_and_changed_exposures(tenant):
    live = bookkeeping.expose(tenant, "demo.echo")
    changed = bookkeeping.expose(tenant, "demo.add")
    Exposure.objects.filter(pk=changed.pk).update(fingerprint="f" * 64)
    gone = stale_exposure(tenant)

    states = {
        state.exposure.engine_id: (state.stale, state.changed)
        for state in bookkeeping.states(tenant.exposures.all())
    }

    assert states == {
        live.engine_id: (False, False),
        "demo.add": (False, True),
        gone.engine_id: (True, False),
    }


def test_approve_records_the_installed_definition(tenant, staff):
    exposure = bookkeeping.expose(tenant, "demo.add")
    Exposure.objects.filter(pk=exposure.pk).update(
        fingerprint="f" * 64, engine_version="0.1", approved_definition=None
    )
    exposure.refresh_from_db()
    before = version(tenant)

    approved = bookkeeping.approve(tenant, ["demo.add"], by=staff, via="api")

    exposure.refresh_from_db()
    assert [e.engine_id for e in approved] == ["demo.add"]
    assert exposure.fingerprint == fingerprint(basic.Add())
    assert exposure.engine_version == "1.0.0"
    assert exposure.approved_definition == definition(basic.Add())
    assert bookkeeping.states([exposure])[0].status == "live"
    assert version(tenant) == before + 1
    event = ExposureEvent.objects.latest("pk")
    assert (event.action, event.engine_ids, event.actor, event.via) == (
        "approve",
        ["demo.add"],
        staff,
        "api",
    )
    assert event.catalog_version == before + 1


def test_approve_all_approves_only_the_changed_ones(tenant):
    bookkeeping.expose_many(tenant, ["demo.add", "demo.echo"])
    Exposure.objects.filter(engine_id="demo.add").update(fingerprint="f" * 64)

    approved = bookkeeping.approve(tenant)

    assert [e.engine_id for e in approved] == ["demo.add"]
    assert bookkeeping.approve(tenant) == []


def test_approving_an_engine_not_exposed_changes_nothing(tenant):
    bookkeeping.expose(tenant, "demo.add")
    before = version(tenant)

    with pytest.raises(NotExposed, match=r"demo\.echo"):
        bookkeeping.approve(tenant, ["demo.add", "demo.echo"])

    assert version(tenant) == before
    assert not ExposureEvent.objects.filter(action="approve").exists()


def test_approving_a_stale_exposure_is_an_unknown_engine(tenant):
    gone = stale_exposure(tenant)

    with pytest.raises(UnknownEngine):
        bookkeeping.approve(tenant, [gone.engine_id])


def test_a_first_exposure_approves_the_definition_of_that_moment(tenant):
    exposure = bookkeeping.expose(tenant, "demo.echo")

    assert exposure.approved_definition == definition(basic.Echo())


def test_a_held_state_shows_the_diff_of_what_changed(tenant, settings):
    exposure = bookkeeping.expose(tenant, "demo.add")
    old = dict(exposure.approved_definition or {})
    Exposure.objects.filter(pk=exposure.pk).update(
        fingerprint="f" * 64,
        approved_definition={**old, "description": "Old words."},
    )

    [state] = bookkeeping.states(tenant.exposures.all())

    assert state.status == "held"
    assert state.diff() == [("description", "Old words.", "Add two numbers.")]
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "DRIFT_POLICY": "serve"}
    assert state.status == "changed"


def test_an_engine_broken_after_registration_is_an_invalid_engine(tenant, registry):
    broken = FunctionEngine("x.broken", "Broken", "Will break.", lambda c: None)
    registry.register(broken)
    object.__setattr__(broken, "description", "")

    with pytest.raises(InvalidEngine, match=r"x\.broken.*description") as info:
        bookkeeping.expose(tenant, "x.broken", registry=registry)

    assert info.value.code == "invalid_engine"
    assert not tenant.exposures.exists()


def race(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls in threads started together; return results or errors."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[Any] = [None] * len(calls)

    def worker(index: int, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[index] = call()
        except Exception as exc:
            outcomes[index] = exc
        finally:
            connection.close()

    threads = [
        threading.Thread(target=worker, args=(i, call)) for i, call in enumerate(calls)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks need PostgreSQL"
)


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_exposes_of_one_engine_create_one_row():
    tenant = Tenant.objects.create(slug="race", name="Race")

    outcomes = race(
        lambda: bookkeeping.expose(tenant, "demo.echo"),
        lambda: bookkeeping.expose(Tenant.objects.get(pk=tenant.pk), "demo.echo"),
    )

    assert sorted(type(o).__name__ for o in outcomes) == [
        "DuplicateExposure",
        "Exposure",
    ]
    assert Exposure.objects.filter(tenant=tenant).count() == 1
    assert version(tenant) == 2


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_exposes_of_colliding_engines_create_one_row():
    tenant = Tenant.objects.create(slug="race", name="Race")

    outcomes = race(
        lambda: bookkeeping.expose(tenant, "demo.echo"),
        lambda: bookkeeping.expose(Tenant.objects.get(pk=tenant.pk), "demo:echo"),
    )

    errors = [o for o in outcomes if isinstance(o, Exception)]
    assert len(errors) == 1
    assert isinstance(errors[0], ToolNameCollision)
    assert Exposure.objects.filter(tenant=tenant).count() == 1


# -- The bulk path: many new tenants at once ----------------------------------


def test_create_exposed_creates_bumped_tenants_with_one_event_each(db, staff):
    tenants = bookkeeping.create_exposed(
        ["bulk-a", "bulk-b"], ["demo.echo", "demo.add"], by=staff, via="command"
    )

    assert [t.slug for t in tenants] == ["bulk-a", "bulk-b"]
    assert [version(t) for t in tenants] == [2, 2]
    rows = Exposure.objects.filter(tenant__slug="bulk-b").order_by("engine_id")
    assert [(e.engine_id, e.tool_name, e.exposed_by) for e in rows] == [
        ("demo.add", "demo_add", staff),
        ("demo.echo", "demo_echo", staff),
    ]
    assert rows[0].fingerprint == fingerprint(default_registry.get("demo.add"))
    events = ExposureEvent.objects.order_by("tenant_slug")
    assert [(e.tenant_slug, e.engine_ids, e.actor, e.via) for e in events] == [
        ("bulk-a", ["demo.add", "demo.echo"], staff, "command"),
        ("bulk-b", ["demo.add", "demo.echo"], staff, "command"),
    ]


@pytest.mark.parametrize(
    ("engine_ids", "error"),
    [
        (["demo.add", "no.such"], UnknownEngine),
        (["demo.echo", "demo:echo"], ToolNameCollision),
        (["demo.add", "demo.add"], DuplicateExposure),
    ],
)
def test_create_exposed_refuses_what_expose_many_refuses(db, engine_ids, error):
    with pytest.raises(error):
        bookkeeping.create_exposed(["bulk-a"], engine_ids)

    assert not Tenant.objects.exists()
    assert not Exposure.objects.exists()


def test_create_exposed_creates_nothing_when_a_slug_is_taken(tenant):
    with pytest.raises(IntegrityError):
        bookkeeping.create_exposed(["fresh", tenant.slug], ["demo.echo"])

    assert list(Tenant.objects.values_list("slug", flat=True)) == [tenant.slug]
    assert not Exposure.objects.exists()
