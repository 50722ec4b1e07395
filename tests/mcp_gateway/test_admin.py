"""The admin, driven through the test client as a superuser."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, bus, tokens
from mcp_gateway.audit.models import ExposureEvent
from mcp_gateway.models import ApiToken, Exposure, Membership, Tenant


@pytest.fixture
def admin_staff(db: None) -> User:
    return User.objects.create_superuser("root", password="root-password")


@pytest.fixture
def admin_client(client: Client, admin_staff: User) -> Client:
    # The API-token backend comes first and never loads session users.
    client.force_login(admin_staff, backend="django.contrib.auth.backends.ModelBackend")
    return client


@pytest.fixture
def admin_tenant(db: None) -> Tenant:
    return Tenant.objects.create(slug="acme", name="Acme")


@pytest.fixture
def admin_member(admin_tenant: Tenant) -> User:
    user = User.objects.create_user("alice")
    Membership.objects.create(tenant=admin_tenant, user=user)
    return user


@pytest.fixture
def admin_without_collision() -> Iterator[None]:
    """Uninstall ``demo:echo`` so that ``expose_all`` can succeed."""
    engine = default_registry.get("demo:echo")
    assert engine is not None
    default_registry.unregister("demo:echo")
    yield
    default_registry.register(engine)


def url(name: str, *args: Any) -> str:
    return reverse(f"admin:mcp_gateway_{name}", args=args)


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def exposed(tenant: Tenant) -> set[str]:
    return set(tenant.exposures.values_list("engine_id", flat=True))


def run_action(
    client: Client, model: str, action: str, *pks: int, confirm: bool = False
) -> Any:
    data = {"action": action, "_selected_action": [str(pk) for pk in pks]}
    if confirm:
        data["post"] = "yes"
    return client.post(url(f"{model}_changelist"), data, follow=True)


# Tenant admin and its actions


@pytest.mark.usefixtures("admin_without_collision")
def test_expose_all_action_exposes_every_installed_engine(admin_client, admin_staff):
    tenant = Tenant.objects.create(slug="acme", name="Acme")

    response = run_action(admin_client, "tenant", "expose_all", tenant.pk)

    assert response.status_code == 200
    assert exposed(tenant) == set(default_registry.ids())
    assert tenant.exposures.filter(exposed_by=admin_staff).count() == len(
        default_registry
    )
    count = len(default_registry)
    [message] = messages_of(response)
    assert message.startswith(f"acme: exposed {count} engine(s): demo_add, ")


def test_expose_all_action_with_a_collision_exposes_the_rest_and_says_so(
    admin_client, admin_tenant
):
    # Before: nothing was exposed, and the message did not say so.
    response = run_action(admin_client, "tenant", "expose_all", admin_tenant.pk)

    assert response.status_code == 200
    found = messages_of(response)
    skipped = [m for m in found if "skipped" in m]
    assert len(skipped) == 2
    assert all("both derive the tool name 'demo_echo'" in m for m in skipped)
    assert exposed(admin_tenant) == set(default_registry.ids()) - {
        "demo.echo",
        "demo:echo",
    }
    [done] = [m for m in found if "skipped" not in m]
    assert done.startswith("acme: exposed ")


def test_unexpose_all_asks_first_and_changes_nothing_until_confirmed(
    admin_client, admin_tenant
):
    bookkeeping.expose_many(admin_tenant, ["demo.echo", "demo.add"])

    asked = run_action(admin_client, "tenant", "unexpose_all", admin_tenant.pk)

    html = asked.content.decode()
    assert "Unexpose every tool?" in html
    assert "demo_echo (demo.echo)" in html
    assert exposed(admin_tenant) == {"demo.echo", "demo.add"}


def test_unexpose_all_action_clears_the_tenant(admin_client, admin_tenant):
    bookkeeping.expose_many(admin_tenant, ["demo.echo", "demo.add"])

    response = run_action(
        admin_client, "tenant", "unexpose_all", admin_tenant.pk, confirm=True
    )

    assert exposed(admin_tenant) == set()
    assert messages_of(response) == ["acme: unexposed 2 engine(s)."]


def test_approve_changes_lists_each_diff_then_approves(admin_client, admin_tenant):
    exposure = bookkeeping.expose(admin_tenant, "demo.echo")
    current = exposure.fingerprint
    old = {**(exposure.approved_definition or {}), "description": "Old echo words."}
    Exposure.objects.filter(pk=exposure.pk).update(
        fingerprint="old", engine_version="0", approved_definition=old
    )

    asked = run_action(admin_client, "tenant", "approve_changes", admin_tenant.pk)

    html = asked.content.decode()
    assert "Old echo words." in html
    assert "Return the text it is given." in html
    exposure.refresh_from_db()
    assert exposure.fingerprint == "old"

    response = run_action(
        admin_client, "tenant", "approve_changes", admin_tenant.pk, confirm=True
    )

    exposure.refresh_from_db()
    assert (exposure.fingerprint, exposure.engine_version) == (current, "1.0.0")
    assert messages_of(response) == ["acme: approved 1 changed tool(s): demo_echo."]
    event = ExposureEvent.objects.latest("pk")
    assert (event.action, event.via) == ("approve", "admin")


def test_tenant_page_lists_exposures_members_and_links_to_expose(
    admin_client, admin_tenant, admin_member
):
    bookkeeping.expose(admin_tenant, "demo.echo")
    Exposure.objects.create(
        tenant=admin_tenant, engine_id="gone.engine", tool_name="gone_engine"
    )

    response = admin_client.get(url("tenant_change", admin_tenant.pk))

    html = response.content.decode()
    assert response.status_code == 200
    assert "demo_echo" in html
    assert "Stale (engine not installed)" in html
    assert "alice" in html
    assert f"{url('exposure_add')}?tenant={admin_tenant.pk}" in html
    assert "Expose an engine" in html


def test_tenant_changelist_shows_exposure_counts(admin_client, admin_tenant):
    bookkeeping.expose_many(admin_tenant, ["demo.echo", "demo.add"])

    response = admin_client.get(url("tenant_changelist"))

    assert response.status_code == 200
    changelist = response.context["cl"]
    assert changelist.model_admin.exposure_count(changelist.result_list[0]) == 2


def test_tenant_form_refuses_a_bad_origin(admin_client):
    data = {
        "slug": "acme",
        "name": "Acme",
        "is_active": "on",
        "allowed_origins": '["https://app.example.com/path"]',
        "engine_config": "{}",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "exposures-TOTAL_FORMS": "0",
        "exposures-INITIAL_FORMS": "0",
    }

    response = admin_client.post(url("tenant_add"), data)

    assert response.status_code == 200
    assert "allowed_origins" in response.context["adminform"].form.errors
    assert not Tenant.objects.exists()


def test_a_tenants_slug_is_read_only_once_created(admin_client, admin_tenant):
    page = admin_client.get(url("tenant_change", admin_tenant.pk))

    form = page.context["adminform"].form
    assert "slug" not in form.fields
    assert "slug" in page.context["adminform"].readonly_fields
    added = admin_client.get(url("tenant_add")).context["adminform"].form
    assert "slug" in added.fields


# Exposure admin


def test_add_form_offers_only_installed_engines_not_yet_exposed(
    admin_client, admin_tenant
):
    bookkeeping.expose_many(admin_tenant, ["demo.echo", "demo.add"])

    response = admin_client.get(f"{url('exposure_add')}?tenant={admin_tenant.pk}")

    form = response.context["adminform"].form
    offered = {value for value, _ in form.fields["engine_id"].choices}
    assert offered == set(default_registry.ids()) - {"demo.echo", "demo.add"} | {""}
    assert form.initial["tenant"] == str(admin_tenant.pk)


def test_add_form_exposes_through_the_bookkeeping_service(
    admin_client, admin_tenant, admin_staff
):
    version = admin_tenant.catalog_version
    data = {"tenant": admin_tenant.pk, "engine_id": "demo.add"}

    response = admin_client.post(url("exposure_add"), data, follow=True)

    exposure = Exposure.objects.get()
    admin_tenant.refresh_from_db()
    assert response.status_code == 200
    assert (exposure.engine_id, exposure.tool_name) == ("demo.add", "demo_add")
    assert exposure.exposed_by == admin_staff
    assert exposure.fingerprint
    assert admin_tenant.catalog_version > version


def test_add_form_with_confirmation_publishes_one_change_already_marked(
    admin_client, admin_tenant, monkeypatch: pytest.MonkeyPatch
):
    published: list[dict[str, bool]] = []

    def spy(event: Any, **kwargs: Any) -> None:
        rows = Exposure.objects.filter(tenant_id=event.tenant)
        published.append(dict(rows.values_list("engine_id", "requires_confirmation")))

    monkeypatch.setattr(bus, "publish", spy)
    data = {
        "tenant": admin_tenant.pk,
        "engine_id": "demo.add",
        "requires_confirmation": "on",
    }

    admin_client.post(url("exposure_add"), data, follow=True)

    assert published == [{"demo.add": True}]


def test_add_form_collision_is_a_message_naming_both_engines(
    admin_client, admin_tenant
):
    bookkeeping.expose(admin_tenant, "demo.echo")
    data = {"tenant": admin_tenant.pk, "engine_id": "demo:echo"}

    response = admin_client.post(url("exposure_add"), data, follow=True)

    [message] = messages_of(response)
    assert "'demo:echo' and 'demo.echo'" in message
    assert response.redirect_chain[-1][0] == (
        f"{url('exposure_add')}?tenant={admin_tenant.pk}"
    )
    assert exposed(admin_tenant) == {"demo.echo"}


def test_add_form_duplicate_is_an_error_and_preselects_no_other_engine(
    admin_client, admin_tenant
):
    # Before: "already exists", and the engine list jumped to another engine
    # (the first offered), so saving again exposed one staff never picked.
    bookkeeping.expose(admin_tenant, "demo.echo")
    data = {"tenant": admin_tenant.pk, "engine_id": "demo.echo"}

    response = admin_client.post(url("exposure_add"), data)

    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.errors["engine_id"] == [
        "Engine demo.echo is already exposed to acme; choose another."
    ]
    html = response.content.decode()
    select = html[html.index('id="id_engine_id"') :]
    select = select[: select.index("</select>")]
    # A browser shows the first option when none is selected: it is blank.
    assert re.findall(r'<option value="([^"]*)"', select)[0] == ""
    assert not re.findall(r'<option value="[^"]+"[^>]*selected', select)
    assert Exposure.objects.count() == 1

    again = admin_client.post(url("exposure_add"), {"tenant": admin_tenant.pk})

    assert again.status_code == 200
    assert "engine_id" in again.context["adminform"].form.errors
    assert exposed(admin_tenant) == {"demo.echo"}


def test_the_add_form_reloads_its_engines_when_the_tenant_changes(admin_client):
    response = admin_client.get(url("exposure_add"))

    html = response.content.decode()
    assert "mcp_gateway/exposure_form.js" in html
    assert "onclick" not in html


def test_add_form_unknown_engine_is_a_message(admin_client, admin_tenant):
    data = {"tenant": admin_tenant.pk, "engine_id": "nope"}

    response = admin_client.post(url("exposure_add"), data, follow=True)

    assert messages_of(response) == ["No engine with id 'nope' is installed."]
    assert not Exposure.objects.exists()


def test_deleting_an_exposure_unexposes_it(admin_client, admin_tenant):
    exposure = bookkeeping.expose(admin_tenant, "demo.echo")
    version = Tenant.objects.get(pk=admin_tenant.pk).catalog_version

    response = admin_client.post(
        url("exposure_delete", exposure.pk), {"post": "yes"}, follow=True
    )

    assert response.status_code == 200
    assert not Exposure.objects.exists()
    assert Tenant.objects.get(pk=admin_tenant.pk).catalog_version > version


def test_delete_selected_unexposes_each_exposure(admin_client, admin_tenant):
    other = Tenant.objects.create(slug="globex", name="Globex")
    rows = [
        *bookkeeping.expose_many(admin_tenant, ["demo.echo", "demo.add"]),
        bookkeeping.expose(other, "demo.add"),
    ]
    data = {
        "action": "delete_selected",
        "_selected_action": [str(row.pk) for row in rows],
        "post": "yes",
    }

    admin_client.post(url("exposure_changelist"), data, follow=True)

    assert not Exposure.objects.exists()


def test_stale_and_changed_exposures_are_flagged_and_filtered(
    admin_client, admin_tenant
):
    live = bookkeeping.expose(admin_tenant, "demo.add")
    changed = bookkeeping.expose(admin_tenant, "demo.echo")
    Exposure.objects.filter(pk=changed.pk).update(fingerprint="old")
    stale = Exposure.objects.create(
        tenant=admin_tenant, engine_id="gone.engine", tool_name="gone_engine"
    )

    listing = admin_client.get(url("exposure_changelist"))
    by_status = {
        status: {
            e.pk
            for e in admin_client.get(url("exposure_changelist"), {"status": status})
            .context["cl"]
            .result_list
        }
        for status in ("live", "stale", "changed")
    }

    html = listing.content.decode()
    assert "Stale (engine not installed)" in html
    assert "Held (definition changed; not served until approved)" in html
    assert by_status == {
        "live": {live.pk},
        "stale": {stale.pk},
        "changed": {changed.pk},
    }


def test_exposure_page_shows_the_status_and_edits_only_confirmation_and_groups(
    admin_client, admin_tenant
):
    exposure = Exposure.objects.create(
        tenant=admin_tenant, engine_id="gone.engine", tool_name="gone_engine"
    )

    response = admin_client.get(url("exposure_change", exposure.pk))

    assert response.status_code == 200
    assert "Stale (engine not installed)" in response.content.decode()
    assert list(response.context["adminform"].form.fields) == [
        "requires_confirmation",
        "groups",
    ]


def test_approve_selected_asks_then_approves_changed_exposures(
    admin_client, admin_tenant
):
    exposure = bookkeeping.expose(admin_tenant, "demo.echo")
    Exposure.objects.filter(pk=exposure.pk).update(
        fingerprint="old", approved_definition=None
    )

    asked = run_action(admin_client, "exposure", "approve_selected", exposure.pk)

    assert "Approved definition unknown" in asked.content.decode()
    assert bookkeeping.states(Exposure.objects.all())[0].changed

    response = run_action(
        admin_client, "exposure", "approve_selected", exposure.pk, confirm=True
    )

    assert not bookkeeping.states(Exposure.objects.all())[0].changed
    assert messages_of(response) == ["acme: approved 1 changed tool(s): demo_echo."]


def test_the_exposure_page_shows_the_diff_and_its_button_approves(
    admin_client, admin_tenant
):
    exposure = bookkeeping.expose(admin_tenant, "demo.echo")
    old = {**(exposure.approved_definition or {}), "title": "Old title"}
    Exposure.objects.filter(pk=exposure.pk).update(
        fingerprint="old", approved_definition=old, engine_version="0.9"
    )
    approve_url = url("exposure_approve", exposure.pk)

    page = admin_client.get(url("exposure_change", exposure.pk)).content.decode()
    asked = admin_client.get(approve_url).content.decode()
    response = admin_client.post(approve_url, {"post": "yes"}, follow=True)

    assert "Old title" in page
    assert approve_url in page
    assert "0.9" in page  # the approved version, beside the installed one
    assert "Old title" in asked
    assert response.redirect_chain[-1][0] == url("exposure_change", exposure.pk)
    assert bookkeeping.state_of(Exposure.objects.get()) == "live"
    assert ExposureEvent.objects.latest("pk").action == "approve"


def test_the_approve_button_needs_change_exposure(client, admin_tenant):
    exposure = bookkeeping.expose(admin_tenant, "demo.echo")
    Exposure.objects.filter(pk=exposure.pk).update(fingerprint="old")
    viewer = User.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename="view_exposure"))
    client.force_login(viewer, backend="django.contrib.auth.backends.ModelBackend")

    response = client.post(url("exposure_approve", exposure.pk), {"post": "yes"})

    assert response.status_code == 403
    assert Exposure.objects.get().fingerprint == "old"


def test_unexposing_from_the_exposure_page_returns_to_the_tenant(
    admin_client, admin_tenant
):
    exposure = bookkeeping.expose(admin_tenant, "demo.echo")

    page = admin_client.get(url("exposure_change", exposure.pk)).content.decode()
    response = admin_client.post(
        url("exposure_delete", exposure.pk), {"post": "yes"}, follow=True
    )

    assert ">Unexpose</a>" in page
    assert response.redirect_chain[-1][0] == url("tenant_change", admin_tenant.pk)


def test_exposure_changelist_query_count_does_not_grow_with_rows(
    admin_client, admin_tenant
):
    bookkeeping.expose_many(admin_tenant, ["demo.echo", "demo.add"])
    with CaptureQueriesContext(connection) as few:
        admin_client.get(url("exposure_changelist"))
    bookkeeping.expose_many(admin_tenant, ["demo.whoami", "demo.fail", "demo.slow"])

    with CaptureQueriesContext(connection) as many:
        admin_client.get(url("exposure_changelist"))

    assert len(many) == len(few)


# API tokens


def token_form(tenant: Tenant, user: User, **extra: Any) -> dict[str, Any]:
    return {"tenant": tenant.pk, "user": user.pk, "scopes": ["mcp:tools"], **extra}


def test_token_creation_shows_the_secret_once_on_its_own_page(
    admin_client, admin_tenant
):
    user = User.objects.create_user("bob")

    response = admin_client.post(url("apitoken_add"), token_form(admin_tenant, user))

    token = ApiToken.objects.get()
    html = response.content.decode()
    [secret] = re.findall(r'value="(mcpgw_[^"]+)"', html)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    assert secret.split("_")[1] == token.prefix
    assert authenticate(None, bearer_token=secret, tenant=admin_tenant) == user
    assert Membership.objects.filter(tenant=admin_tenant, user=user).exists()
    again = admin_client.get(url("apitoken_change", token.pk))
    assert token.prefix in again.content.decode()
    assert secret not in again.content.decode()
    assert token.secret_hash not in again.content.decode()


def test_a_new_tokens_secret_never_goes_into_the_messages_cookie(
    admin_client, admin_tenant
):
    user = User.objects.create_user("bob")

    response = admin_client.post(url("apitoken_add"), token_form(admin_tenant, user))

    cookies = unquote("".join(m.value for m in admin_client.cookies.values()))
    stored = [str(message) for message in get_messages(response.wsgi_request)]
    assert "mcpgw_" not in cookies
    assert not any("mcpgw_" in message for message in stored)
    listed = admin_client.get(url("apitoken_changelist")).content.decode()
    assert "mcpgw_" not in listed


def test_only_a_superuser_mints_a_token_for_a_superuser_in_the_admin(
    client, admin_tenant, admin_staff
):
    clerk = User.objects.create_user("clerk", is_staff=True)
    clerk.user_permissions.set(
        Permission.objects.filter(codename__in=["add_apitoken", "view_apitoken"])
    )
    client.force_login(clerk, backend="django.contrib.auth.backends.ModelBackend")

    response = client.post(url("apitoken_add"), token_form(admin_tenant, admin_staff))

    assert response.status_code == 200
    assert "user" in response.context["adminform"].form.errors
    assert not ApiToken.objects.exists()


def test_token_creation_with_a_lifetime_and_read_scope(
    admin_client, admin_tenant, admin_member
):
    data = token_form(admin_tenant, admin_member, scopes=["mcp:tools:read"])

    admin_client.post(url("apitoken_add"), {**data, "expires_in": "60"})

    token = ApiToken.objects.get()
    assert token.scopes == ["mcp:tools:read"]
    assert token.expires_at is not None


def test_token_form_refuses_an_unknown_scope(admin_client, admin_tenant, admin_member):
    data = token_form(admin_tenant, admin_member, scopes=["root"])

    response = admin_client.post(url("apitoken_add"), data)

    assert response.status_code == 200
    assert "scopes" in response.context["adminform"].form.errors
    assert not ApiToken.objects.exists()


def test_revoke_action_revokes_the_selected_tokens(
    admin_client, admin_tenant, admin_member
):
    issued = [tokens.issue(admin_tenant, admin_member) for _ in range(2)]
    kept = tokens.issue(admin_tenant, admin_member)

    response = run_action(
        admin_client, "apitoken", "revoke_selected", *(i.token.pk for i in issued)
    )

    [message] = messages_of(response)
    assert message.startswith("Revoked 2 token(s): ")
    for item in issued:
        assert authenticate(None, bearer_token=item.secret, tenant=admin_tenant) is None
    assert authenticate(None, bearer_token=kept.secret, tenant=admin_tenant)


def test_token_changelist_shows_prefixes_only(admin_client, admin_tenant, admin_member):
    issued = tokens.issue(admin_tenant, admin_member)

    response = admin_client.get(url("apitoken_changelist"))

    html = response.content.decode()
    assert issued.token.prefix in html
    assert issued.secret not in html


# Memberships


def test_membership_changelist_lists_members(admin_client, admin_member):
    response = admin_client.get(url("membership_changelist"), {"q": "alice"})

    assert response.status_code == 200
    assert [m.user for m in response.context["cl"].result_list] == [admin_member]


def test_add_form_without_a_tenant_offers_every_installed_engine(admin_client):
    response = admin_client.get(url("exposure_add"))

    form = response.context["adminform"].form
    assert [value for value, _ in form.fields["engine_id"].choices] == [
        "",
        *default_registry.ids(),
    ]


def test_admin_pages_carry_the_gateway_branding(admin_client):
    response = admin_client.get(reverse("admin:index"))

    assert "MCP gateway administration" in response.content.decode()


# The Engines page


def test_the_engines_page_lists_each_engine_its_tenants_and_drift(
    admin_client, admin_tenant
):
    bookkeeping.expose_many(admin_tenant, ["demo.echo", "demo.add"])
    Exposure.objects.filter(engine_id="demo.add").update(fingerprint="old")

    response = admin_client.get(url("installedengine_changelist"))

    assert response.status_code == 200
    rows = {row["id"]: row for row in response.context["rows"]}
    assert list(rows) == default_registry.ids()
    assert rows["demo.add"]["held"] == 1
    assert [e["status"] for e in rows["demo.add"]["exposures"]] == ["held"]
    assert rows["demo.echo"]["held"] == 0
    html = response.content.decode()
    assert f"{url('exposure_add')}?engine_id=demo.echo" in html
    assert rows["demo.echo"]["fingerprint"][:12] in html


def test_the_engines_page_needs_a_permission_on_exposures(client, admin_tenant):
    staff = User.objects.create_user("staff", is_staff=True)
    client.force_login(staff, backend="django.contrib.auth.backends.ModelBackend")

    assert client.get(url("installedengine_changelist")).status_code == 403
    staff.user_permissions.set(Permission.objects.filter(codename="view_exposure"))
    assert client.get(url("installedengine_changelist")).status_code == 200


def test_the_tenant_list_counts_held_and_stale_tools(admin_client, admin_tenant):
    bookkeeping.expose_many(admin_tenant, ["demo.echo", "demo.add"])
    Exposure.objects.filter(engine_id="demo.add").update(fingerprint="old")
    Exposure.objects.create(
        tenant=admin_tenant, engine_id="gone.engine", tool_name="gone_engine"
    )

    response = admin_client.get(url("tenant_changelist"))

    changelist = response.context["cl"]
    [row] = changelist.result_list
    assert changelist.model_admin.needs_attention(row) == "1 held, 1 stale"


def test_the_tenant_history_page_shows_its_exposure_events(
    admin_client, admin_tenant, admin_staff
):
    bookkeeping.expose(admin_tenant, "demo.echo", by=admin_staff, via="admin")
    bookkeeping.unexpose(admin_tenant, "demo.echo", via="command")

    response = admin_client.get(url("tenant_history", admin_tenant.pk))

    assert response.status_code == 200
    events = response.context["exposure_events"]
    assert [(e.action, e.via) for e in events] == [
        ("unexpose", "command"),
        ("expose", "admin"),
    ]
    html = response.content.decode()
    assert "Exposure history" in html
    assert "Management command" in html or "management command" in html


def test_the_admin_links_the_api_root_schema_and_swagger_ui(admin_client):
    index = admin_client.get(reverse("admin:index")).content.decode()
    app = admin_client.get(reverse("admin:app_list", args=["mcp_gateway"]))

    assert 'href="/api/"' in index
    assert 'href="/api/docs/"' in index
    html = app.content.decode()
    assert 'href="/api/schema/"' in html
    assert 'href="/api/docs/"' in html


def test_the_admin_index_tells_the_two_kinds_of_token_apart(admin_client):
    html = admin_client.get(reverse("admin:index")).content.decode()

    assert "MCP tokens" in html
    assert ">Tokens<" in html  # the REST API's keys, as DRF names them


def test_the_secret_page_gives_a_copy_button_and_the_client_configuration(
    admin_client, admin_tenant
):
    user = User.objects.create_user("bob")

    response = admin_client.post(url("apitoken_add"), token_form(admin_tenant, user))

    html = response.content.decode()
    [secret] = set(re.findall(r"mcpgw_[0-9a-f]+_[A-Za-z0-9-]+", html))
    assert 'data-mcp-copy="mcp-token"' in html
    assert "mcp_gateway/admin.js" in html
    assert "onclick" not in html
    config = response.context["client_config"]
    server = json.loads(config)["mcpServers"]["gateway"]
    assert server["url"].endswith("/t/acme/mcp")
    assert server["headers"] == {"Authorization": f"Bearer {secret}"}
    assert all(secret not in c.value for c in response.cookies.values())
    assert all(secret not in str(m) for m in get_messages(response.wsgi_request))


def test_the_token_page_revokes_after_asking_and_revoking_again_says_so(
    admin_client, admin_tenant, admin_member
):
    issued = tokens.issue(admin_tenant, admin_member)
    revoke = url("apitoken_revoke", issued.token.pk)

    page = admin_client.get(url("apitoken_change", issued.token.pk)).content.decode()
    asked = admin_client.get(revoke)
    done = admin_client.post(revoke, follow=True)
    again = run_action(admin_client, "apitoken", "revoke_selected", issued.token.pk)

    assert revoke in page
    assert "Revoke the token" in asked.content.decode()
    assert ApiToken.objects.get().revoked_at is not None
    assert messages_of(done) == [f"Revoked 1 token(s): {issued.token.prefix}."]
    assert messages_of(again) == [f"Already revoked, unchanged: {issued.token.prefix}."]
    assert authenticate(None, bearer_token=issued.secret, tenant=admin_tenant) is None


def test_tokens_show_a_status_and_scopes_as_a_list(
    admin_client, admin_tenant, admin_member
):
    active = tokens.issue(admin_tenant, admin_member).token
    revoked = tokens.issue(admin_tenant, admin_member).token
    tokens.revoke(revoked.prefix)

    listing = admin_client.get(url("apitoken_changelist"))
    only_revoked = admin_client.get(url("apitoken_changelist"), {"status": "revoked"})

    admin = listing.context["cl"].model_admin
    assert admin.status(active) == "Active"
    assert admin.status(ApiToken.objects.get(pk=revoked.pk)) == "Revoked"
    assert admin.scope_list(active) == ", ".join(active.scopes)
    assert [t.pk for t in only_revoked.context["cl"].result_list] == [revoked.pk]


def test_unexposing_asks_in_its_own_words_not_deletes(admin_client, admin_tenant):
    exposure = bookkeeping.expose(admin_tenant, "demo.echo")
    selected = {"action": "delete_selected", "_selected_action": [str(exposure.pk)]}

    one = admin_client.get(url("exposure_delete", exposure.pk)).content.decode()
    many = admin_client.post(url("exposure_changelist"), selected).content.decode()
    listing = admin_client.get(url("exposure_changelist")).content.decode()

    for page in (one, many):
        body = page.split("<body")[1].split(">", 1)[1]
        shown = re.sub(r"<[^>]+>", " ", body)  # the text only
        assert 'value="Yes, unexpose"' in body
        assert not re.search(r"(?i)\bdelet", shown)
    assert "Unexpose this tool?" in one
    assert "Unexpose these tools?" in many
    assert ">Unexpose selected exposures<" in listing
    assert "Delete selected exposures" not in listing
    assert Exposure.objects.filter(pk=exposure.pk).exists()


def test_unexpose_all_from_the_tenant_page_asks_then_returns_to_it(
    admin_client, admin_tenant
):
    bookkeeping.expose_many(admin_tenant, ["demo.echo", "demo.add"])
    version = Tenant.objects.get(pk=admin_tenant.pk).catalog_version
    page = admin_client.get(url("tenant_change", admin_tenant.pk)).content.decode()
    link = reverse("admin:mcp_gateway_tenant_unexpose_all", args=[admin_tenant.pk])

    asked = admin_client.get(link)
    kept = Exposure.objects.filter(tenant=admin_tenant).count()
    done = admin_client.post(link, {"post": "yes"}, follow=True)

    assert f'href="{link}"' in page
    assert "Unexpose every tool?" in asked.content.decode()
    assert kept == 2
    assert done.redirect_chain[-1][0] == url("tenant_change", admin_tenant.pk)
    assert "unexposed 2 engine(s)" in done.content.decode()
    assert not Exposure.objects.filter(tenant=admin_tenant).exists()
    assert Tenant.objects.get(pk=admin_tenant.pk).catalog_version > version


def test_unexpose_all_without_confirmation_changes_nothing(admin_client, admin_tenant):
    bookkeeping.expose(admin_tenant, "demo.echo")
    link = reverse("admin:mcp_gateway_tenant_unexpose_all", args=[admin_tenant.pk])

    response = admin_client.post(link, {})

    assert response.status_code == 404
    assert Exposure.objects.filter(tenant=admin_tenant).exists()
