"""The API's root lists its routes; the browsable API renders every list."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_the_api_root_lists_the_routes_and_links_the_schema_and_docs(api):
    response = api.get("/api/")

    assert response.status_code == 200
    body = response.json()
    assert body["schema"].endswith("/api/schema/")
    assert body["docs"].endswith("/api/docs/")
    paths = [route["path"] for route in body["routes"]]
    assert "/api/engines/" in paths
    assert "/api/tenants/{slug}/exposures/{engine_id}/approve/" in paths
    assert {"method", "path", "needs"} <= set(body["routes"][0])


def test_the_api_root_is_staff_only(client):
    assert client.get("/api/").status_code in (401, 403)


@pytest.mark.parametrize("path", ["/api/", "/api/engines/", "/api/usage/"])
def test_the_browsable_api_renders_lists_without_a_queryset(admin_client, path):
    response = admin_client.get(path, HTTP_ACCEPT="text/html")

    assert response.status_code == 200, response.content[:500]
    assert b"<html" in response.content
