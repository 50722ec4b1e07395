from __future__ import annotations

from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from mcp_gateway import tokens
from mcp_gateway.models import ApiToken, Membership

URL = "/api/tenants/acme/tokens/"


def test_posting_returns_the_secret_once(api, tenant, staff):
    response = api.post(URL, {"name": "ci"}, format="json")

    assert response.status_code == 201
    body = response.json()
    assert body["token"].startswith(f"mcpgw_{body['prefix']}_")
    assert body["username"] == staff.username
    assert body["scopes"] == ["mcp:tools"]
    token = ApiToken.objects.get(prefix=body["prefix"])
    parts = tokens.split(body["token"])
    assert parts is not None
    assert tokens.matches(token, parts[1])
    assert Membership.objects.filter(tenant=tenant, user=staff).exists()
    listed = api.get(URL).json()["results"]
    assert [t["prefix"] for t in listed] == [body["prefix"]]
    assert "token" not in listed[0]


def test_a_token_for_another_user_with_scopes_and_a_lifetime(api, tenant):
    User.objects.create_user("bob")

    response = api.post(
        URL,
        {"username": "bob", "scopes": ["mcp:tools:read"], "expires_in": 60},
        format="json",
    )

    body = response.json()
    assert response.status_code == 201
    assert body["username"] == "bob"
    assert body["scopes"] == ["mcp:tools:read"]
    assert body["expires_at"] is not None


def test_an_unknown_scope_or_lifetime_is_invalid(api, tenant):
    response = api.post(URL, {"scopes": ["root"], "expires_in": 0}, format="json")

    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"scopes", "expires_in"}


def test_deleting_by_prefix_revokes(api, tenant, issued_token):
    prefix = issued_token.token.prefix

    response = api.delete(f"{URL}{prefix}/")

    assert response.status_code == 204
    issued_token.token.refresh_from_db()
    assert issued_token.token.revoked_at is not None
    assert api.get(URL).json()["results"][0]["revoked_at"] is not None


def test_another_tenants_token_is_not_revoked_here(api, other_tenant, staff, tenant):
    issued = tokens.issue(other_tenant, staff)

    response = api.delete(f"{URL}{issued.token.prefix}/")

    assert response.status_code == 404
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is None


def test_only_a_superuser_mints_a_token_for_a_superuser(tenant, staff):
    clerk = User.objects.create_user("clerk", is_staff=True)
    clerk.user_permissions.set(
        Permission.objects.filter(codename__in=["add_apitoken", "view_apitoken"])
    )
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=clerk.pk))

    for_root = client.post(URL, {"username": staff.username}, format="json")
    for_self = client.post(URL, {}, format="json")

    assert for_root.status_code == 403
    assert for_root.json()["code"] == "permission_denied"
    assert list(ApiToken.objects.values_list("user__username", flat=True)) == ["clerk"]
    assert not Membership.objects.filter(user=staff).exists()
    assert for_self.status_code == 201


def test_a_superuser_mints_a_token_for_another_superuser(api, tenant):
    User.objects.create_superuser("root2")

    response = api.post(URL, {"username": "root2"}, format="json")

    assert response.status_code == 201
