from __future__ import annotations

from typing import Any

import pytest

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, bus
from mcp_gateway.audit.models import ExposureEvent
from mcp_gateway.models import Exposure

URL = "/api/tenants/acme/exposures/"


def test_posting_an_engine_id_exposes_it_through_bookkeeping(api, tenant, staff):
    version = tenant.catalog_version

    response = api.post(URL, {"engine_id": "demo.echo"}, format="json")

    assert response.status_code == 201
    body = response.json()
    assert body["engine_id"] == "demo.echo"
    assert body["tool_name"] == "demo_echo"
    assert body["status"] == "live"
    assert body["exposed_by"] == staff.username
    tenant.refresh_from_db()
    assert tenant.catalog_version == version + 1


def test_posting_with_confirmation_publishes_one_change_already_marked(
    api, tenant, monkeypatch: pytest.MonkeyPatch
):
    published: list[dict[str, bool]] = []

    def spy(event: Any, **kwargs: Any) -> None:
        rows = Exposure.objects.filter(tenant_id=event.tenant)
        published.append(dict(rows.values_list("engine_id", "requires_confirmation")))

    monkeypatch.setattr(bus, "publish", spy)
    version = tenant.catalog_version

    response = api.post(
        URL,
        {"engine_id": "demo.echo", "requires_confirmation": True},
        format="json",
    )

    assert response.status_code == 201
    assert response.json()["requires_confirmation"] is True
    assert published == [{"demo.echo": True}]
    tenant.refresh_from_db()
    assert tenant.catalog_version == version + 1
    events = ExposureEvent.objects.values_list("action", "catalog_version", "via")
    assert sorted(events) == [
        ("confirmation", version + 1, "api"),
        ("expose", version + 1, "api"),
    ]


def test_exposures_are_listed_with_their_tool_names(api, tenant):
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])

    body = api.get(URL).json()

    assert body["count"] == 2
    names = {e["engine_id"]: e["tool_name"] for e in body["results"]}
    assert names == {"demo.add": "demo_add", "demo.echo": "demo_echo"}


def test_an_exposure_is_read_by_an_engine_id_with_dots_and_colons(api, tenant):
    bookkeeping.expose_many(tenant, ["demo:echo"])

    response = api.get(f"{URL}demo:echo/")

    assert response.status_code == 200
    assert response.json()["tool_name"] == "demo_echo"


def test_a_stale_exposure_is_flagged(api, tenant):
    bookkeeping.expose(tenant, "demo.echo")
    Exposure.objects.filter(engine_id="demo.echo").update(engine_id="gone.engine")

    body = api.get(f"{URL}gone.engine/").json()

    assert body["status"] == "stale"


def test_deleting_an_exposure_unexposes_it(api, tenant):
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    tenant.refresh_from_db()
    version = tenant.catalog_version

    response = api.delete(f"{URL}demo.echo/")

    assert response.status_code == 204
    assert list(tenant.exposures.values_list("engine_id", flat=True)) == ["demo.add"]
    tenant.refresh_from_db()
    assert tenant.catalog_version == version + 1


def test_deleting_an_engine_that_is_not_exposed_is_404(api, tenant):
    response = api.delete(f"{URL}demo.echo/")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_exposures_of_an_unknown_tenant_are_404(api, db):
    assert api.get("/api/tenants/nope/exposures/").status_code == 404


def test_exposures_are_scoped_to_their_tenant(api, tenant, other_tenant):
    bookkeeping.expose(other_tenant, "demo.echo")

    assert api.get(URL).json()["count"] == 0
    assert api.get(f"{URL}demo.echo/").status_code == 404


def test_expose_all_is_idempotent(api, tenant, without_collision):
    first = api.post(f"{URL}expose-all/")
    second = api.post(f"{URL}expose-all/")

    assert first.status_code == second.status_code == 200
    exposed = {e["engine_id"] for e in first.json()["exposed"]}
    assert exposed == set(default_registry.ids())
    assert second.json() == {"exposed": [], "skipped": []}
    assert tenant.exposures.count() == len(default_registry)


def test_expose_all_with_a_collision_exposes_the_rest_and_lists_the_skipped(
    api, tenant
):
    response = api.post(f"{URL}expose-all/")

    assert response.status_code == 200
    body = response.json()
    skipped = {s["engine_id"]: s["reason"] for s in body["skipped"]}
    assert set(skipped) == {"demo.echo", "demo:echo"}
    assert "both derive the tool name 'demo_echo'" in skipped["demo:echo"]
    exposed = {e["engine_id"] for e in body["exposed"]}
    assert exposed == set(default_registry.ids()) - {"demo.echo", "demo:echo"}
    assert set(tenant.exposures.values_list("engine_id", flat=True)) == exposed


def test_expose_all_skips_an_engine_whose_name_an_exposed_one_has(api, tenant):
    bookkeeping.expose(tenant, "demo.echo")

    body = api.post(f"{URL}expose-all/").json()

    assert [s["engine_id"] for s in body["skipped"]] == ["demo:echo"]
    assert "exposed engine 'demo.echo'" in body["skipped"][0]["reason"]
    assert tenant.exposures.count() == len(default_registry) - 1


def test_api_changes_are_recorded_as_made_through_the_api(api, tenant, staff):
    api.post(URL, {"engine_id": "demo.echo"}, format="json")
    api.delete(f"{URL}demo.echo/")

    events = ExposureEvent.objects.filter(tenant=tenant).order_by("pk")

    assert [(e.action, e.via, e.actor_id) for e in events] == [
        ("expose", "api", staff.pk),
        ("unexpose", "api", staff.pk),
    ]


def test_a_changed_exposure_shows_its_installed_definition_beside_the_approved(
    api, tenant
):
    exposure = bookkeeping.expose(tenant, "demo.echo")
    Exposure.objects.filter(pk=exposure.pk).update(fingerprint="old")
    installed = bookkeeping.states([Exposure.objects.get(pk=exposure.pk)])[0]

    body = api.get("/api/tenants/acme/exposures/demo.echo/").json()

    assert body["status"] == "held"
    assert body["fingerprint"] == "old"
    assert body["installed_fingerprint"] not in (None, "old")
    assert body["installed_definition"] == installed.installed_definition
    assert body["installed_definition"]["name"] == "demo_echo"


def test_the_tenant_list_counts_live_held_and_stale_tools(api, tenant):
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add", "demo.slow"])
    Exposure.objects.filter(engine_id="demo.echo").update(fingerprint="old")
    Exposure.objects.filter(engine_id="demo.add").update(engine_id="gone.engine")

    listed = api.get("/api/tenants/").json()["results"]

    assert listed[0]["tool_status"] == {"live": 1, "held": 1, "changed": 0, "stale": 1}
