from __future__ import annotations

from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from mcp_gateway.models import Membership

URL = "/api/tenants/acme/members/"


def test_posting_a_username_adds_a_member(api, tenant):
    User.objects.create_user("bob")

    response = api.post(URL, {"username": "bob", "role": "admin"}, format="json")

    assert response.status_code == 201
    assert response.json()["username"] == "bob"
    assert Membership.objects.get(user__username="bob").role == "admin"


def test_posting_an_existing_member_changes_the_role(api, tenant, member):
    response = api.post(URL, {"username": "alice", "role": "admin"}, format="json")

    assert response.status_code == 200
    assert response.json()["role"] == "admin"
    assert Membership.objects.filter(tenant=tenant).count() == 1


def test_members_are_listed(api, tenant, member):
    body = api.get(URL).json()

    assert body["count"] == 1
    assert body["results"][0]["username"] == "alice"
    assert body["results"][0]["role"] == "member"


def test_an_unknown_user_or_role_is_invalid(api, tenant):
    response = api.post(URL, {"username": "nobody", "role": "owner"}, format="json")

    body = response.json()
    assert response.status_code == 400
    assert body["code"] == "invalid"
    assert set(body["errors"]) == {"username", "role"}


def test_deleting_by_username_removes_the_membership(api, tenant, member):
    response = api.delete(f"{URL}alice/")

    assert response.status_code == 204
    assert not Membership.objects.filter(tenant=tenant).exists()


def test_deleting_a_non_member_is_404(api, tenant, other_tenant):
    User.objects.create_user("carol")

    assert api.delete(f"{URL}carol/").status_code == 404


def test_changing_a_role_needs_change_membership_too(tenant, member):
    clerk = User.objects.create_user("clerk", is_staff=True)
    clerk.user_permissions.set(
        Permission.objects.filter(codename__in=["add_membership"])
    )
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=clerk.pk))

    promoted = client.post(URL, {"username": "alice", "role": "admin"}, format="json")
    added = client.post(URL, {"username": "clerk"}, format="json")

    assert promoted.status_code == 403
    assert promoted.json()["code"] == "permission_denied"
    assert Membership.objects.get(user=member).role == "member"
    assert added.status_code == 201
