"""The error mapping: one body shape, the bookkeeping codes, never a 500."""

from __future__ import annotations

import json

import pytest

from mcp_gateway import bookkeeping
from mcp_gateway.models import Tenant

URL = "/api/tenants/acme/exposures/"


def test_a_duplicate_exposure_is_409_duplicate_exposure(api, tenant):
    bookkeeping.expose(tenant, "demo.echo")

    response = api.post(URL, {"engine_id": "demo.echo"}, format="json")

    assert response.status_code == 409
    assert response.json() == {
        "code": "duplicate_exposure",
        "detail": "Engine 'demo.echo' is already exposed to tenant 'acme'.",
    }


def test_a_tool_name_collision_is_409_naming_both_engines(api, tenant):
    bookkeeping.expose(tenant, "demo.echo")

    response = api.post(URL, {"engine_id": "demo:echo"}, format="json")

    body = response.json()
    assert response.status_code == 409
    assert body["code"] == "tool_name_collision"
    assert "'demo:echo'" in body["detail"]
    assert "'demo.echo'" in body["detail"]
    assert tenant.exposures.count() == 1


def test_an_unknown_engine_is_400_unknown_engine(api, tenant):
    response = api.post(URL, {"engine_id": "no.such.engine"}, format="json")

    assert response.status_code == 400
    assert response.json() == {
        "code": "unknown_engine",
        "detail": "No engine with id 'no.such.engine' is installed.",
    }


def test_an_invalid_engine_is_400_invalid_engine(api, tenant, settings):
    from engines_app.registry import default_registry
    from tests.engines import ColonEcho

    broken = ColonEcho()
    default_registry.unregister("demo:echo")
    default_registry._engines["demo:echo"] = broken
    type(broken).description = ""
    try:
        response = api.post(URL, {"engine_id": "demo:echo"}, format="json")
    finally:
        type(broken).description = "An engine whose tool name collides with demo.echo."
        default_registry.unregister("demo:echo")
        default_registry.register(broken)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_engine"
    assert "description" in response.json()["detail"]


def test_a_missing_field_is_400_invalid_with_field_errors(api, tenant):
    response = api.post(URL, {}, format="json")

    assert response.status_code == 400
    assert response.json() == {
        "code": "invalid",
        "detail": "engine_id: This field is required.",
        "errors": {"engine_id": ["This field is required."]},
    }


def test_malformed_json_is_400_parse_error(api, tenant):
    response = api.post(URL, b"{", content_type="application/json")

    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"


@pytest.mark.parametrize("text", ["a\x00b", "\ud800"])
def test_strings_no_database_can_store_are_400_not_500(api, tenant, text):
    body = json.dumps({"slug": "x", "name": text})

    response = api.post("/api/tenants/", body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"


def test_a_nul_in_the_query_string_is_400_not_500(api, tenant):
    response = api.get("/api/tenants/", {"search": "a\x00"})

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_a_nul_in_the_path_is_404_not_500(api, tenant):
    assert api.get(f"{URL}a%00b/").status_code == 404


def test_form_data_is_415(api, tenant):
    response = api.post(URL, {"engine_id": "demo.echo"})

    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_json_nested_thousands_deep_is_400_parse_error(api, db, depth):
    body = '{"slug": "deep", "name": "Deep", "engine_config": {"a": '
    body += "[" * depth + "]" * depth + "}}"

    response = api.post("/api/tenants/", body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"
    assert not Tenant.objects.exists()


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1E400"])
def test_a_number_that_overflows_is_400_parse_error(api, db, number):
    body = '{"slug": "big", "name": "Big", "engine_config": {"a": ' + number + "}}"

    response = api.post("/api/tenants/", body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"
    assert not Tenant.objects.exists()
