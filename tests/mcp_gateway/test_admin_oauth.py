"""Admin: a tenant's authorization servers inline, groups on exposures."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from mcp_gateway import bookkeeping
from mcp_gateway.models import AuthorizationServer, Exposure, Tenant

PREFIX = "authorization_servers"


@pytest.fixture
def admin_client(client: Client, staff: User) -> Client:
    client.force_login(staff, backend="django.contrib.auth.backends.ModelBackend")
    return client


def url(name: str, *args: Any) -> str:
    return reverse(f"admin:mcp_gateway_{name}", args=args)


def tenant_form(
    client: Client, tenant: Tenant, servers: list[dict[str, str]], initial: int = 0
) -> dict[str, Any]:
    """The tenant's change form as shown, with ``servers`` as the inline rows."""
    page = client.get(url("tenant_change", tenant.pk)).context
    data: dict[str, Any] = {}
    form = page["adminform"].form
    for name in form.fields:
        value = form[name].value()
        if value is True:
            data[name] = "on"
        elif value not in (False, None):
            data[name] = value
    for inline in page["inline_admin_formsets"]:
        prefix = inline.formset.prefix
        data[f"{prefix}-TOTAL_FORMS"] = str(inline.formset.initial_form_count())
        data[f"{prefix}-INITIAL_FORMS"] = str(inline.formset.initial_form_count())
    data[f"{PREFIX}-TOTAL_FORMS"] = str(len(servers))
    data[f"{PREFIX}-INITIAL_FORMS"] = str(initial)
    for index, server in enumerate(servers):
        for key, value in server.items():
            data[f"{PREFIX}-{index}-{key}"] = value
    return data


def introspection(**extra: str) -> dict[str, str]:
    return {
        "issuer": "https://id.example",
        "kind": "introspection",
        "introspection_endpoint": "https://id.example/introspect",
        "client_id": "gateway",
        "client_secret": "s3cret",
        "user_claim": "username",
        "user_field": "username",
        "algorithms": "[]",
        "scopes": "[]",
        "tenant": "",
        **extra,
    }


def test_staff_add_an_authorization_server_and_the_version_is_bumped(
    admin_client, tenant
):
    before = tenant.catalog_version

    response = admin_client.post(
        url("tenant_change", tenant.pk),
        tenant_form(admin_client, tenant, [introspection()]),
    )

    assert response.status_code == 302, response.context["inline_admin_formsets"]
    server = AuthorizationServer.objects.get()
    assert server.client_secret == "s3cret"
    assert Tenant.objects.get(pk=tenant.pk).catalog_version == before + 1


def test_the_client_secret_is_write_only_and_kept_when_left_empty(admin_client, tenant):
    server = AuthorizationServer.objects.create(
        tenant=tenant,
        **{
            k: v
            for k, v in introspection().items()
            if k not in {"algorithms", "scopes", "tenant"}
        },
    )

    page = admin_client.get(url("tenant_change", tenant.pk)).content.decode()
    edited = introspection(id=str(server.pk), tenant=str(tenant.pk), client_secret="")
    edited["user_claim"] = "email"
    admin_client.post(
        url("tenant_change", tenant.pk), tenant_form(admin_client, tenant, [edited], 1)
    )

    assert "s3cret" not in page
    server.refresh_from_db()
    assert (server.user_claim, server.client_secret) == ("email", "s3cret")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("issuer", "http://id.example"),
        ("issuer", "ftp://id.example"),
        ("algorithms", '["HS256"]'),
        ("algorithms", '["none"]'),
        ("scopes", '["bad scope\\""]'),
        ("client_secret", ""),
    ],
)
def test_an_unsafe_configuration_is_refused(admin_client, tenant, field, value):
    response = admin_client.post(
        url("tenant_change", tenant.pk),
        tenant_form(admin_client, tenant, [introspection(**{field: value})]),
    )

    assert response.status_code == 200
    assert not AuthorizationServer.objects.exists()


def test_loopback_http_issuers_are_allowed_only_by_the_setting(
    admin_client, tenant, settings
):
    loopback = introspection(
        issuer="http://127.0.0.1:9000",
        introspection_endpoint="http://127.0.0.1:9000/introspect",
    )
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "ALLOW_INSECURE_LOOPBACK_ISSUERS": False,
    }
    refused = admin_client.post(
        url("tenant_change", tenant.pk), tenant_form(admin_client, tenant, [loopback])
    )
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "ALLOW_INSECURE_LOOPBACK_ISSUERS": True,
    }
    allowed = admin_client.post(
        url("tenant_change", tenant.pk), tenant_form(admin_client, tenant, [loopback])
    )

    assert (refused.status_code, allowed.status_code) == (200, 302)


def test_deleting_an_authorization_server_bumps_the_version(admin_client, tenant):
    server = AuthorizationServer.objects.create(
        tenant=tenant, issuer="https://idp.example", jwks_uri="https://idp.example/k"
    )
    form = {
        "id": str(server.pk),
        "tenant": str(tenant.pk),
        "issuer": server.issuer,
        "kind": "jwt",
        "jwks_uri": server.jwks_uri,
        "algorithms": "[]",
        "scopes": "[]",
        "user_claim": "sub",
        "user_field": "username",
        "DELETE": "on",
    }
    before = Tenant.objects.get(pk=tenant.pk).catalog_version

    admin_client.post(
        url("tenant_change", tenant.pk), tenant_form(admin_client, tenant, [form], 1)
    )

    assert not AuthorizationServer.objects.exists()
    assert Tenant.objects.get(pk=tenant.pk).catalog_version == before + 1


def test_staff_restrict_an_exposure_to_groups_through_bookkeeping(admin_client, tenant):
    group = Group.objects.create(name="finance")
    exposure = bookkeeping.expose(tenant, "demo.add")
    before = Tenant.objects.get(pk=tenant.pk).catalog_version

    response = admin_client.post(
        url("exposure_change", exposure.pk), {"groups": [str(group.pk)]}
    )

    assert response.status_code == 302
    assert list(Exposure.objects.get(pk=exposure.pk).groups.all()) == [group]
    assert Tenant.objects.get(pk=tenant.pk).catalog_version == before + 1
    assert Exposure.objects.get(pk=exposure.pk).engine_id == "demo.add"


def test_a_second_introspection_server_is_a_form_error(admin_client, tenant):
    second = introspection(
        issuer="https://id2.example", introspection_endpoint="https://id2.example/i"
    )

    response = admin_client.post(
        url("tenant_change", tenant.pk),
        tenant_form(admin_client, tenant, [introspection(), second]),
    )

    assert response.status_code == 200
    assert "at most one introspection server" in response.content.decode()
    assert not AuthorizationServer.objects.exists()


@pytest.mark.parametrize(
    "issuer",
    ["https://169.254.169.254", "https://10.0.0.5", "https://metadata.google.internal"],
)
def test_a_server_on_a_refused_host_is_a_form_error(
    admin_client, tenant, settings, issuer
):
    response = admin_client.post(
        url("tenant_change", tenant.pk),
        tenant_form(admin_client, tenant, [introspection(issuer=issuer)]),
    )

    assert response.status_code == 200
    assert "refused" in response.content.decode()
    assert not AuthorizationServer.objects.exists()


def test_an_unresolvable_host_is_saved_with_a_warning(admin_client, tenant):
    response = admin_client.post(
        url("tenant_change", tenant.pk),
        tenant_form(admin_client, tenant, [introspection()]),
        follow=True,
    )

    assert AuthorizationServer.objects.count() == 1
    warnings = [
        str(m) for m in response.context["messages"] if m.level_tag == "warning"
    ]
    assert len(warnings) == 1
    assert "id.example does not resolve" in warnings[0]


def test_lists_are_one_entry_per_line_and_shown_so(admin_client, tenant):
    jwt = {
        **introspection(),
        "kind": "jwt",
        "introspection_endpoint": "",
        "client_id": "",
        "client_secret": "",
        "algorithms": "RS256\r\nES256\r\n",
        "scopes": "mcp:tools\nmcp:tools:read",
    }

    response = admin_client.post(
        url("tenant_change", tenant.pk), tenant_form(admin_client, tenant, [jwt])
    )

    assert response.status_code == 302
    server = AuthorizationServer.objects.get()
    assert server.algorithms == ["RS256", "ES256"]
    assert server.scopes == ["mcp:tools", "mcp:tools:read"]
    page = admin_client.get(url("tenant_change", tenant.pk)).content.decode()
    assert "RS256\nES256</textarea>" in page


def test_fields_are_grouped_by_kind_with_help_for_each(admin_client, tenant):
    AuthorizationServer.objects.create(tenant=tenant, issuer="https://id.example")

    response = admin_client.get(url("tenant_change", tenant.pk))

    html = response.content.decode()
    assert "mcp-kind-jwt" in html
    assert "mcp-kind-introspection" in html
    [inline] = [
        i
        for i in response.context["inline_admin_formsets"]
        if i.formset.prefix == PREFIX
    ]
    form = inline.formset.forms[0]
    assert all(
        form.fields[name].help_text
        for name in form.fields
        if name != "id" and name != "DELETE" and name != "tenant"
    )
    assert "onclick" not in html
