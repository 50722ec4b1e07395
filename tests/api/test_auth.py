"""Staff only: DRF tokens for scripts, sessions with CSRF for browsers."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
ROUTES = [
    ("get", "/api/tenants/"),
    ("post", "/api/tenants/"),
    ("get", "/api/tenants/acme/"),
    ("patch", "/api/tenants/acme/"),
    ("get", "/api/tenants/acme/members/"),
    ("post", "/api/tenants/acme/members/"),
    ("delete", "/api/tenants/acme/members/alice/"),
    ("get", "/api/tenants/acme/exposures/"),
    ("post", "/api/tenants/acme/exposures/"),
    ("get", "/api/tenants/acme/exposures/demo.echo/"),
    ("delete", "/api/tenants/acme/exposures/demo.echo/"),
    ("post", "/api/tenants/acme/exposures/expose-all/"),
    ("get", "/api/tenants/acme/tokens/"),
    ("post", "/api/tenants/acme/tokens/"),
    ("delete", "/api/tenants/acme/tokens/abc/"),
    ("get", "/api/engines/"),
    ("get", "/api/schema/"),
    ("get", "/api/docs/"),
]


@pytest.mark.parametrize(("method", "url"), ROUTES)
def test_anonymous_requests_are_401_with_a_token_challenge(method, url, tenant):
    response = getattr(APIClient(), method)(url, {}, format="json")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    if not url.endswith("/docs/"):  # an HTML page
        assert response.json()["code"] == "not_authenticated"


@pytest.mark.parametrize(("method", "url"), ROUTES)
def test_non_staff_users_are_403(method, url, tenant, member):
    client = APIClient()
    client.force_authenticate(member)

    response = getattr(client, method)(url, {}, format="json")

    assert response.status_code == 403
    if not url.endswith("/docs/"):  # an HTML page
        assert response.json()["code"] == "permission_denied"


def test_a_staff_drf_token_authenticates_scripts(tenant, staff):
    key = Token.objects.create(user=staff).key
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")

    response = client.get("/api/tenants/")

    assert response.status_code == 200
    assert response.json()["results"][0]["slug"] == "acme"


def test_a_bad_drf_token_is_401_authentication_failed(tenant):
    client = APIClient(HTTP_AUTHORIZATION="Token nope")

    response = client.get("/api/tenants/")

    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_a_tenant_mcp_token_does_not_authenticate_the_api(tenant, staff):
    from mcp_gateway import tokens

    secret = tokens.issue(tenant, staff).secret
    client = APIClient(HTTP_AUTHORIZATION=f"Bearer {secret}")

    assert client.get("/api/tenants/").status_code == 401


def test_a_session_post_without_csrf_is_403(tenant, staff):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(staff, backend=MODEL_BACKEND)

    read = client.get("/api/tenants/")
    write = client.post("/api/tenants/", {"slug": "x", "name": "X"}, format="json")

    assert read.status_code == 200
    assert write.status_code == 403
    assert write.json()["code"] == "permission_denied"
    assert "CSRF" in write.json()["detail"]


def test_a_session_post_with_the_csrf_token_is_accepted(tenant, staff):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(staff, backend=MODEL_BACKEND)
    client.get("/admin/")
    csrf = client.cookies["csrftoken"].value

    response = client.post(
        "/api/tenants/",
        {"slug": "x", "name": "X"},
        format="json",
        HTTP_X_CSRFTOKEN=csrf,
    )

    assert response.status_code == 201


def test_an_inactive_staff_user_is_refused(tenant):
    user = User.objects.create_user("old", is_staff=True, is_active=False)
    key = Token.objects.create(user=user).key
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")

    assert client.get("/api/tenants/").status_code == 401
