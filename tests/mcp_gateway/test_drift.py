"""A tool whose definition changed is held until staff approve it again.

The engine ``tests.engines.Drifting`` takes its description from the setting
``MCPGW_DRIFTING_DESCRIPTION``: changing the setting is what a deploy of new
engine code does. Driven over HTTP with the test client, in the dated era
(``MCP-Protocol-Version: 2025-11-25``) and the stateless one (2026-07-28).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler
from django.db import OperationalError, connection
from django.test import Client
from rest_framework.test import APIClient

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, catalog
from mcp_gateway.asgi import BoundaryGuard as ASGIGuard
from mcp_gateway.audit.models import ExposureEvent, ToolCall
from mcp_gateway.catalog import catalog_for, clear_cache
from mcp_gateway.models import Exposure, Tenant
from mcp_gateway.wsgi import BoundaryGuard as WSGIGuard
from tests.engines import Drifting

MODERN = "2026-07-28"
ERAS = ("2025-11-25", MODERN)
NEW = "Count words. Now also deletes files."


@pytest.fixture(autouse=True)
def drifting() -> Iterator[None]:
    """Install the drifting engine; a fresh catalog cache around each test."""
    default_registry.register(Drifting)
    clear_cache()
    yield
    clear_cache()
    default_registry.unregister("test.drifting")


@pytest.fixture
def exposed(tenant: Tenant) -> Tenant:
    bookkeeping.expose_many(tenant, ["test.drifting", "demo.echo"])
    return Tenant.objects.get(pk=tenant.pk)


def drift(settings: Any, policy: str = "hold") -> None:
    """Deploy new engine code: the drifting tool's description changes, in
    a new process (nothing cached yet)."""
    settings.MCPGW_DRIFTING_DESCRIPTION = NEW
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "DRIFT_POLICY": policy}
    clear_cache()


def rpc(token: str, era: str, method: str, params: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": era}
    if era == MODERN:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {**params, "_meta": meta}
        headers["Mcp-Method"] = method
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = Client().post(
        "/t/acme/mcp",
        json.dumps(body),
        content_type="application/json",
        headers=headers,
    )
    return response


def tools(token: str, era: str) -> dict[str, str]:
    response = rpc(token, era, "tools/list", {})
    assert response.status_code == 200, response.content
    return {t["name"]: t["description"] for t in response.json()["result"]["tools"]}


def call(token: str, era: str, name: str) -> Any:
    return rpc(token, era, "tools/call", {"name": name, "arguments": {"text": "a b"}})


def staff_api(staff: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(staff)
    return client


@pytest.mark.parametrize("era", ERAS)
def test_a_changed_tool_is_neither_listed_nor_callable_until_approved(
    exposed, token, staff, settings, era
):
    assert tools(token, era)["test_drifting"] == "Count words."

    drift(settings)

    assert tools(token, era) == {"demo_echo": "Return the text it is given."}
    held = call(token, era, "test_drifting")
    unknown = call(token, era, "nope")
    assert held.status_code == unknown.status_code
    assert json.dumps(held.json()).replace("test_drifting", "X") == json.dumps(
        unknown.json()
    ).replace("nope", "X")
    assert call(token, era, "demo_echo").status_code == 200  # the others stay

    response = staff_api(staff).post(
        "/api/tenants/acme/exposures/test.drifting/approve/"
    )

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "live"
    assert tools(token, era)["test_drifting"] == NEW
    result = call(token, era, "test_drifting").json()["result"]
    assert json.loads(result["content"][0]["text"]) == {"words": 2}


@pytest.mark.parametrize("era", ERAS)
def test_under_serve_the_new_definition_is_served_and_flagged(
    exposed, token, staff, settings, era
):
    drift(settings, "serve")

    listed = tools(token, era)
    body = staff_api(staff).get("/api/tenants/acme/exposures/test.drifting/").json()

    assert listed["test_drifting"] == NEW
    assert call(token, era, "test_drifting").status_code == 200
    assert body["status"] == "changed"


def test_the_api_shows_held_and_the_approved_definition(exposed, staff, settings):
    drift(settings)

    body = staff_api(staff).get("/api/tenants/acme/exposures/test.drifting/").json()

    assert body["status"] == "held"
    assert body["approved_definition"]["description"] == "Count words."
    assert body["installed_version"] == "1.0.0"


def test_approving_what_is_not_exposed_is_a_404_and_changes_nothing(
    exposed, staff, settings
):
    drift(settings)
    before = Tenant.objects.get(pk=exposed.pk).catalog_version

    response = staff_api(staff).post("/api/tenants/acme/exposures/demo.add/approve/")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert Tenant.objects.get(pk=exposed.pk).catalog_version == before


def test_drift_is_recorded_once_per_process_with_a_version_bump(
    exposed, token, settings, caplog
):
    drift(settings)
    before = Tenant.objects.get(pk=exposed.pk).catalog_version

    with caplog.at_level(logging.WARNING, logger="mcp_gateway"):
        for _ in range(3):
            tools(token, "2025-11-25")

    events = ExposureEvent.objects.filter(action="drift")
    assert [(e.engine_ids, e.via, e.actor) for e in events] == [
        (["test.drifting"], "code", None)
    ]
    assert Tenant.objects.get(pk=exposed.pk).catalog_version == before + 1
    assert events[0].catalog_version == before + 1
    warnings = [r.getMessage() for r in caplog.records if "changed" in r.getMessage()]
    assert len(warnings) == 1
    assert "held until approved" in warnings[0]


def test_a_new_change_after_approval_is_recorded_again(exposed, token, settings):
    drift(settings)
    tools(token, "2025-11-25")
    bookkeeping.approve(Tenant.objects.get(pk=exposed.pk), ["test.drifting"])
    settings.MCPGW_DRIFTING_DESCRIPTION = "Count words, again changed."

    assert "test_drifting" not in tools(token, "2025-11-25")

    assert ExposureEvent.objects.filter(action="drift").count() == 2


def test_a_process_logs_held_exposures_when_it_builds_its_first_catalog(
    exposed, settings, caplog
):
    drift(settings)
    catalog._started.clear()
    try:
        with caplog.at_level(logging.WARNING, logger="mcp_gateway"):
            catalog_for(Tenant.objects.get(pk=exposed.pk))
            catalog_for(Tenant.objects.get(pk=exposed.pk))
    finally:
        catalog._started.set()

    started = [
        r.getMessage() for r in caplog.records if "mcp_approve" in r.getMessage()
    ]
    assert started == [
        "Tenant acme: engine 'test.drifting' changed since it was approved; "
        "held until staff approve it (python manage.py mcp_approve acme "
        "test.drifting)."
    ]


HELD_LINE = (
    "Tenant acme: engine 'test.drifting' changed since it was approved; "
    "held until staff approve it (python manage.py mcp_approve acme "
    "test.drifting)."
)


@pytest.mark.django_db(transaction=True)  # read from the guard's thread
@pytest.mark.parametrize("server", ["wsgi", "asgi"])
def test_the_guard_logs_held_exposures_as_the_process_starts(
    exposed, settings, caplog, monkeypatch, server
):
    """Not in the first request: reading every tenant's exposures there
    would cost the first caller a million rows at 10,000 tenants."""
    drift(settings)
    catalog._started.clear()
    again: list[object] = []
    try:
        with caplog.at_level(logging.WARNING, logger="mcp_gateway"):
            if server == "wsgi":
                WSGIGuard(WSGIHandler())
            else:
                ASGIGuard(ASGIHandler())
        monkeypatch.setattr(catalog, "log_held", lambda *a: again.append(a))
        built = catalog_for(Tenant.objects.get(pk=exposed.pk))
    finally:
        catalog._started.set()

    logged = [r.getMessage() for r in caplog.records if "mcp_approve" in r.getMessage()]
    assert logged == [HELD_LINE]
    assert again == []  # the first build read no other tenant's exposures
    assert built.held


@pytest.mark.django_db(transaction=True)  # read from another thread
def test_under_a_running_loop_the_guard_logs_from_a_thread_of_its_own(
    exposed, settings, caplog
):
    drift(settings)
    catalog._started.clear()
    threads: list[str] = []
    original = catalog.log_held

    def recorded(*args: Any) -> int:
        threads.append(threading.current_thread().name)
        return original(*args)

    async def started() -> None:
        ASGIGuard(ASGIHandler())

    try:
        catalog.log_held = recorded  # type: ignore[assignment]
        with caplog.at_level(logging.WARNING, logger="mcp_gateway"):
            asyncio.run(started())
    finally:
        catalog.log_held = original
        catalog._started.set()

    logged = [r.getMessage() for r in caplog.records if "mcp_approve" in r.getMessage()]
    assert logged == [HELD_LINE]
    assert len(threads) == 1
    assert threads[0] != threading.current_thread().name


@pytest.mark.django_db(transaction=True)
def test_the_guard_leaves_no_connection_open_for_a_fork(exposed, settings):
    """``gunicorn --preload`` forks workers after the guard is made: a
    connection it left open would be shared by all of them."""
    drift(settings)
    catalog._started.clear()
    connection.close()
    try:
        WSGIGuard(WSGIHandler())
    finally:
        catalog._started.set()

    assert connection.connection is None


def test_a_failure_at_the_first_build_is_not_tried_again(
    exposed, settings, monkeypatch
):
    """Each build would pay the whole read again."""
    drift(settings)
    catalog._started.clear()
    tried: list[object] = []

    def unreachable(*args: Any) -> int:
        tried.append(args)
        raise OperationalError("statement timeout")

    monkeypatch.setattr(catalog, "log_held", unreachable)
    try:
        catalog_for(Tenant.objects.get(pk=exposed.pk))
        clear_cache()
        catalog_for(Tenant.objects.get(pk=exposed.pk))
    finally:
        catalog._started.set()

    assert len(tried) == 1


def test_a_database_not_there_at_start_defers_the_log_to_the_first_build(
    exposed, settings, caplog, monkeypatch
):
    drift(settings)
    catalog._started.clear()
    original = catalog.log_held

    def unreachable(*args: Any) -> int:
        raise OperationalError("the database is starting")

    try:
        monkeypatch.setattr(catalog, "log_held", unreachable)
        WSGIGuard(WSGIHandler())
        monkeypatch.setattr(catalog, "log_held", original)
        with caplog.at_level(logging.WARNING, logger="mcp_gateway"):
            catalog_for(Tenant.objects.get(pk=exposed.pk))
    finally:
        catalog._started.set()

    logged = [r.getMessage() for r in caplog.records if "mcp_approve" in r.getMessage()]
    assert logged == [HELD_LINE]


def test_held_exposures_are_logged_sorted_and_only_they(tenant, settings, caplog):
    """Other tenants' unchanged exposures are read and dropped."""
    second = Tenant.objects.create(slug="aaa", name="First by slug")
    bookkeeping.expose_many(tenant, ["test.drifting", "demo.echo"])
    bookkeeping.expose_many(second, ["test.drifting", "demo.echo"])
    drift(settings)

    with caplog.at_level(logging.WARNING, logger="mcp_gateway"):
        held = catalog.log_held()

    logged = [r.getMessage().split(";")[0] for r in caplog.records]
    assert held == 2
    assert logged == [
        "Tenant aaa: engine 'test.drifting' changed since it was approved",
        "Tenant acme: engine 'test.drifting' changed since it was approved",
    ]


def test_a_held_call_is_audited_as_an_unknown_tool_with_its_error_code(
    exposed, token, settings
):
    drift(settings)

    call(token, "2025-11-25", "test_drifting")

    row = ToolCall.objects.get(tool_name="test_drifting")
    assert (row.outcome, row.engine_id, row.error_code) == ("invalid", "", "-32602")


def test_a_tool_error_stores_its_code(tenant, token):
    bookkeeping.expose(tenant, "demo.fail")

    rpc(token, "2025-11-25", "tools/call", {"name": "demo_fail", "arguments": {}})

    row = ToolCall.objects.get(tool_name="demo_fail")
    assert row.outcome == "failed"
    assert row.error_code == "EXECUTION_FAILED"


def test_exposure_events_are_readable_through_the_api(exposed, staff, settings):
    drift(settings)
    bookkeeping.approve(exposed, ["test.drifting"], by=staff, via="api")
    bookkeeping.unexpose(exposed, "demo.echo", by=staff, via="admin")

    body = staff_api(staff).get("/api/tenants/acme/exposure-events/").json()

    assert [
        (e["action"], e["engine_ids"], e["by"], e["via"]) for e in body["results"]
    ] == [
        ("unexpose", ["demo.echo"], staff.username, "admin"),
        ("approve", ["test.drifting"], staff.username, "api"),
        ("expose", ["demo.echo", "test.drifting"], "", "code"),
    ]
    assert staff_api(staff).get("/api/tenants/nope/exposure-events/").status_code == 404


def test_an_invalid_policy_is_a_system_check_error_and_holds(exposed, settings, token):
    from mcp_gateway.checks import check_settings

    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "DRIFT_POLICY": "sometimes"}
    settings.MCPGW_DRIFTING_DESCRIPTION = NEW

    assert [e.id for e in check_settings(None)] == ["mcp_gateway.E006"]
    assert "test_drifting" not in tools(token, "2025-11-25")


def test_the_migration_stores_definitions_that_match_and_leaves_changed_unknown(
    exposed,
):
    from django.apps import apps as real_apps

    from mcp_gateway.fingerprint import definition

    module = __import__(
        "mcp_gateway.migrations.0007_exposure_approved_definition",
        fromlist=["store_approved_definitions"],
    )
    Exposure.objects.filter(engine_id="demo.echo").update(approved_definition=None)
    Exposure.objects.filter(engine_id="test.drifting").update(
        approved_definition=None, fingerprint="old"
    )
    ExposureEvent.objects.create(
        tenant=exposed, tenant_slug="acme", action="confirm", catalog_version=1
    )

    class Editor:
        class connection:
            alias = "default"

    module.store_approved_definitions(real_apps, Editor)

    echo = Exposure.objects.get(engine_id="demo.echo")
    drifting = Exposure.objects.get(engine_id="test.drifting")
    assert echo.approved_definition == definition(default_registry.get("demo.echo"))
    assert drifting.approved_definition is None
    assert bookkeeping.state_of(drifting) == "held"
    assert not ExposureEvent.objects.filter(action="confirm").exists()


@pytest.mark.parametrize("era", ERAS)
def test_an_approval_through_the_command_is_served_at_once(
    exposed, token, settings, era
):
    from io import StringIO

    from django.core.management import call_command

    drift(settings)
    assert "test_drifting" not in tools(token, era)

    out = StringIO()
    call_command("mcp_approve", "acme", "--all", stdout=out)

    assert out.getvalue() == "Approved 1 exposure of 'acme': test_drifting.\n"
    assert tools(token, era)["test_drifting"] == NEW
    event = ExposureEvent.objects.filter(action="approve").get()
    assert (event.via, event.actor) == ("command", None)


def test_a_drift_that_cannot_be_recorded_still_holds(exposed, token, settings):
    from unittest import mock

    from django.db import OperationalError

    drift(settings)
    with mock.patch.object(
        bookkeeping, "record_drift", side_effect=OperationalError("down")
    ):
        assert "test_drifting" not in tools(token, "2025-11-25")

    assert not ExposureEvent.objects.filter(action="drift").exists()
    clear_cache()
    tools(token, "2025-11-25")
    assert ExposureEvent.objects.filter(action="drift").count() == 1
