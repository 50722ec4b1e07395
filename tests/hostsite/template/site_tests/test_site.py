"""The host site's own tests: the gateway's test helpers, from the wheel."""

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.authtoken.models import Token

import mcp_gateway
from mcp_gateway.models import Membership
from mcp_gateway.testing import MCPTestClient, make_tenant

GATEWAY_APPS = ("mcp_gateway", "engines_app")


def test_the_app_comes_from_site_packages_not_a_source_tree():
    assert "site-packages" in mcp_gateway.__file__


def test_the_testing_user_signs_in_by_email(mcp_user):
    assert mcp_user.get_username() == "mcp-user@example.com"


@pytest.mark.parametrize("fixture", ["mcp_client", "mcp_legacy_client"])
def test_the_sites_engine_answers_through_the_real_view_in_both_eras(
    request, fixture, mcp_user
):
    client = request.getfixturevalue(fixture)

    names = [tool["name"] for tool in client.list_tools()]
    result = client.call_tool("site_summarize", {"text": "one two three four"})

    assert "site_summarize" in names
    assert client.path == "/api/mcp/test-tenant/mcp"
    assert result["structuredContent"] == {
        "summary": "one two three",
        "caller": mcp_user.get_username(),
    }


def test_a_call_without_a_token_is_refused(mcp_tenant):
    assert MCPTestClient(mcp_tenant).request("tools/list").status_code == 401


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser("root@example.com", "root-pw-1")


def gateway_changelists():
    for model in admin.site._registry:
        if model._meta.app_label in GATEWAY_APPS:
            yield reverse(
                f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"
            )


@pytest.mark.parametrize(
    "first",
    [
        "django.contrib.auth.backends.ModelBackend",
        "mcp_gateway.backends.ApiTokenBackend",
        "mcp_gateway.oauth.backend.OAuthBackend",
    ],
)
def test_force_login_opens_every_gateway_changelist_and_search(
    client, root, mcp_token, settings, first
):
    settings.AUTHENTICATION_BACKENDS = [
        first,
        *(b for b in settings.AUTHENTICATION_BACKENDS if b != first),
    ]
    client.force_login(root)

    urls = list(gateway_changelists())
    statuses = {url: client.get(url).status_code for url in urls}
    searched = {url: client.get(url, {"q": "mcp-user"}).status_code for url in urls}

    assert len(urls) >= 6
    assert set(statuses.values()) == {200}, statuses
    assert set(searched.values()) == {200}, searched


def test_the_membership_search_finds_a_user_by_email(client, root, mcp_user):
    client.force_login(root)

    page = client.get(
        reverse("admin:mcp_gateway_membership_changelist"), {"q": "mcp-user@"}
    )

    assert page.status_code == 200
    assert "mcp-user@example.com" in page.content.decode()


def test_the_sites_own_login_view_still_signs_in(client, root):
    refused = client.post(
        "/accounts/login/", {"email": "root@example.com", "password": "wrong"}
    )
    signed_in = client.post(
        "/accounts/login/", {"email": "root@example.com", "password": "root-pw-1"}
    )

    assert refused.status_code == 401
    assert signed_in.status_code == 200
    assert client.get("/accounts/me/").content == b"root@example.com"
    assert client.get("/admin/").status_code == 200


def test_the_management_api_takes_the_login_field_as_username(client, root, mcp_tenant):
    other = get_user_model().objects.create_user("carol@example.com")
    auth = {"Authorization": f"Token {Token.objects.create(user=root).key}"}
    base = f"/api/gateway/tenants/{mcp_tenant.slug}"

    added = client.post(
        f"{base}/members/",
        {"username": "carol@example.com"},
        content_type="application/json",
        headers=auth,
    )
    listed = client.get(f"{base}/members/", {"search": "carol"}, headers=auth)
    removed = client.delete(f"{base}/members/carol@example.com/", headers=auth)

    assert added.status_code == 201, added.content
    assert added.json()["username"] == "carol@example.com"
    assert [m["username"] for m in listed.json()["results"]] == ["carol@example.com"]
    assert removed.status_code == 204
    assert not Membership.objects.filter(user=other).exists()


def test_the_api_schema_answers_with_drf_spectacular(client, root):
    auth = {"Authorization": f"Token {Token.objects.create(user=root).key}"}

    response = client.get("/api/gateway/schema/", headers=auth)

    assert response.status_code == 200
    assert "/api/gateway/tenants/" in response.json()["paths"]


def test_make_tenant_picks_the_sites_engine(db):
    tenant = make_tenant("solo", engines=["site.summarize"])

    assert [e.tool_name for e in tenant.exposures.all()] == ["site_summarize"]
