"""The OpenAPI schema is valid, and the API keeps to it under schemathesis."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.validation import validate_schema
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.specs.openapi.checks import positive_data_acceptance

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import Tenant

OPERATIONS = {
    ("get", "/api/audit/"),
    ("get", "/api/usage/"),
    ("get", "/api/engines/"),
    ("get", "/api/"),
    ("post", "/api/tenants/{slug}/exposures/{engine_id}/approve/"),
    ("get", "/api/tenants/{slug}/exposure-events/"),
    ("get", "/api/tenants/"),
    ("post", "/api/tenants/"),
    ("get", "/api/tenants/{slug}/"),
    ("patch", "/api/tenants/{slug}/"),
    ("get", "/api/tenants/{slug}/members/"),
    ("post", "/api/tenants/{slug}/members/"),
    ("delete", "/api/tenants/{slug}/members/{username}/"),
    ("get", "/api/tenants/{slug}/exposures/"),
    ("post", "/api/tenants/{slug}/exposures/"),
    ("get", "/api/tenants/{slug}/exposures/{engine_id}/"),
    ("patch", "/api/tenants/{slug}/exposures/{engine_id}/"),
    ("delete", "/api/tenants/{slug}/exposures/{engine_id}/"),
    ("post", "/api/tenants/{slug}/exposures/expose-all/"),
    ("get", "/api/tenants/{slug}/tokens/"),
    ("post", "/api/tenants/{slug}/tokens/"),
    ("delete", "/api/tenants/{slug}/tokens/{prefix}/"),
    ("get", "/api/tenants/{slug}/secrets/"),
    ("post", "/api/tenants/{slug}/secrets/"),
    ("delete", "/api/tenants/{slug}/secrets/{engine_id}/{name}/"),
}


def test_the_schema_is_valid_openapi_3_with_exactly_the_routes(api, db):
    response = api.get("/api/schema/")

    assert response.status_code == 200
    schema = response.json()
    validate_schema(schema)  # type: ignore[no-untyped-call]
    assert schema["openapi"].startswith("3.")
    routes = {
        (method, path) for path, item in schema["paths"].items() for method in item
    }
    assert routes == OPERATIONS


def test_every_operation_documents_the_error_body(api, db):
    schema = api.get("/api/schema/").json()

    for item in schema["paths"].values():
        for operation in item.values():
            for status in ("400", "401", "403", "404"):
                content = operation["responses"][status]["content"]
                ref = content["application/json"]["schema"]["$ref"]
                assert ref == "#/components/schemas/Error"


def test_the_yaml_schema_is_served_on_request(api, db):
    response = api.get("/api/schema/", {"format": "yaml"})

    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3.")


def test_the_docs_page_uses_local_assets_not_a_cdn(api, db):
    response = api.get("/api/docs/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
    assert "cdn" not in html.lower()


@pytest.fixture
def staff_token(staff) -> str:
    return str(Token.objects.create(user=staff).key)


@pytest.fixture
def wsgi_app():
    """The project's WSGI app, kept from closing the test's DB connection.

    Django's own test client does the same: a real handler closes the
    connection when a request finishes, which would end the test transaction.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(wsgi_app, staff, staff_token):
    """Load the schema from the WSGI app, with data for positive cases."""
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.add"])
    tokens.issue(tenant, staff)
    ToolCall.objects.create(
        tenant=tenant,
        tenant_slug="acme",
        tool_name="demo_echo",
        engine_id="demo.echo",
        outcome="ok",
        arguments={"text": "hi"},
    )
    headers = {"Authorization": f"Token {staff_token}"}
    return schemathesis.openapi.from_wsgi("/api/schema/", wsgi_app, headers=headers)


# Schema-valid data naming a user or an engine that does not exist is rightly
# refused (400 invalid / unknown_engine), so the heuristic check that expects
# valid data to be accepted is left out; every other check runs.
#
# schemathesis' own pytest plugin (``from_fixture``/``parametrize``) does not
# run under pytest 9, so each operation gets a Hypothesis test of its own.
@pytest.mark.parametrize(("method", "path"), sorted(OPERATIONS))
def test_the_api_keeps_to_its_schema(api_schema, staff_token, method, path):
    operation = api_schema[path][method.upper()]
    headers = {"Authorization": f"Token {staff_token}"}

    @given(case=operation.as_strategy())
    @settings(
        max_examples=20,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def keeps_to_schema(case):
        case.call_and_validate(
            headers=headers, excluded_checks=[positive_data_acceptance]
        )

    keeps_to_schema()


def test_without_drf_spectacular_in_installed_apps_the_schema_routes_are_404(
    api, db, settings
):
    settings.INSTALLED_APPS = [
        app for app in settings.INSTALLED_APPS if not app.startswith("drf_spectacular")
    ]

    schema = api.get("/api/schema/")
    docs = api.get("/api/docs/")
    engines = api.get("/api/engines/")

    assert schema.status_code == docs.status_code == 404
    assert schema.json() == {"code": "not_found", "detail": "Not found."}
    assert engines.status_code == 200


def test_decorated_actions_build_on_the_gateway_schema_not_the_sites_default():
    from mcp_gateway.api.schema import GatewayAutoSchema
    from mcp_gateway.api.views import ApiTokenViewSet, ExposureViewSet

    for method in (ApiTokenViewSet.create, ExposureViewSet.expose_all):
        assert issubclass(method.kwargs["schema"], GatewayAutoSchema)
