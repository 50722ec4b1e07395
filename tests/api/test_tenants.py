from __future__ import annotations

from mcp_gateway.models import Tenant


def test_staff_creates_a_tenant_and_reads_its_mcp_url(api, db):
    response = api.post(
        "/api/tenants/",
        {
            "slug": "initech",
            "name": "Initech",
            "allowed_origins": ["HTTPS://a.test:443"],
        },
        format="json",
    )

    assert response.status_code == 201
    body = response.json()
    assert body["slug"] == "initech"
    assert body["is_active"] is True
    assert body["allowed_origins"] == ["https://a.test"]
    assert body["mcp_url"] == "http://testserver/t/initech/mcp"
    assert Tenant.objects.filter(slug="initech").exists()


def test_tenants_are_listed_paginated_by_slug(api, tenant, other_tenant):
    response = api.get("/api/tenants/", {"page_size": 1})

    body = response.json()
    assert response.status_code == 200
    assert body["count"] == 2
    assert [t["slug"] for t in body["results"]] == ["acme"]
    assert body["next"].endswith("page=2&page_size=1")


def test_tenants_are_searchable_and_filterable(api, tenant, other_tenant):
    other_tenant.is_active = False
    other_tenant.save()

    searched = api.get("/api/tenants/", {"search": "glob"}).json()
    inactive = api.get("/api/tenants/", {"is_active": "false"}).json()

    assert [t["slug"] for t in searched["results"]] == ["globex"]
    assert [t["slug"] for t in inactive["results"]] == ["globex"]


def test_a_non_boolean_filter_value_is_a_validation_error(api, tenant):
    response = api.get("/api/tenants/", {"is_active": "maybe"})

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_a_tenant_is_read_by_slug(api, tenant):
    response = api.get("/api/tenants/acme/")

    assert response.status_code == 200
    assert response.json()["name"] == "Acme"


def test_patching_is_active_false_disables_the_tenant(api, tenant):
    response = api.patch("/api/tenants/acme/", {"is_active": False}, format="json")

    assert response.status_code == 200
    tenant.refresh_from_db()
    assert tenant.is_active is False


def test_a_duplicate_slug_is_a_validation_error(api, tenant):
    response = api.post("/api/tenants/", {"slug": "acme", "name": "x"}, format="json")

    body = response.json()
    assert response.status_code == 400
    assert body["code"] == "invalid"
    assert "slug" in body["errors"]
    assert body["detail"].startswith("slug: ")


def test_an_origin_with_a_path_is_refused(api, db):
    response = api.post(
        "/api/tenants/",
        {"slug": "x", "name": "x", "allowed_origins": ["https://a.test/path"]},
        format="json",
    )

    assert response.status_code == 400
    assert "allowed_origins" in response.json()["errors"]


def test_an_unknown_tenant_is_404_with_the_error_body(api, db):
    response = api.get("/api/tenants/nope/")

    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "detail": "Not found."}


def test_put_and_delete_are_not_routes(api, tenant):
    put = api.put("/api/tenants/acme/", {"slug": "acme", "name": "A"}, format="json")
    delete = api.delete("/api/tenants/acme/")

    assert put.status_code == delete.status_code == 405
    assert delete.json()["code"] == "method_not_allowed"


def test_a_changed_slug_is_refused_and_nothing_changes(api, tenant):
    response = api.patch(
        "/api/tenants/acme/", {"slug": "renamed", "name": "X"}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert "slug" in response.json()["errors"]
    assert list(Tenant.objects.values_list("slug", "name")) == [("acme", "Acme")]


def test_patching_the_same_slug_is_allowed(api, tenant):
    response = api.patch("/api/tenants/acme/", {"slug": "acme"}, format="json")

    assert response.status_code == 200
