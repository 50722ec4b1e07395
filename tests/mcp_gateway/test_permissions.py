"""The permissions matrix: every API route and admin action of the one table.

For each row: staff holding only view permissions, staff holding just what
the row names (and, in the admin, the view permission that opens the page),
and a superuser. A refusal is a 403 in the API's error shape (or, in the
admin, an action neither offered nor run) and changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from engines_app.context import Principal
from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, call_approvals, permissions, tokens
from mcp_gateway.audit.models import ExposureEvent
from mcp_gateway.engine_secrets import service
from mcp_gateway.engine_secrets.models import EngineSecret
from mcp_gateway.models import ApiToken, CallApproval, Exposure, Membership, Tenant

DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


@dataclass(frozen=True)
class Call:
    url: str
    ok: int
    body: dict[str, Any] | None = None


def api_call(route: permissions.ApiRoute, world: World) -> Call:
    """How the matrix calls a route, and the status of a success."""
    base = "/api/tenants/acme/"
    calls = {
        ("GET", ""): Call("/api/", 200),
        ("POST", "tenants/{slug}/exposures/{engine_id}/approve/"): Call(
            f"{base}exposures/demo.echo/approve/", 200
        ),
        ("GET", "tenants/{slug}/exposure-events/"): Call(
            f"{base}exposure-events/", 200
        ),
        ("GET", "schema/"): Call("/api/schema/", 200),
        ("GET", "docs/"): Call("/api/docs/", 200),
        ("GET", "engines/"): Call("/api/engines/", 200),
        ("GET", "audit/"): Call("/api/audit/", 200),
        ("GET", "usage/"): Call("/api/usage/", 200),
        ("GET", "tenants/"): Call("/api/tenants/", 200),
        ("POST", "tenants/"): Call(
            "/api/tenants/", 201, {"slug": "initech", "name": "Initech"}
        ),
        ("GET", "tenants/{slug}/"): Call(base, 200),
        ("PATCH", "tenants/{slug}/"): Call(base, 200, {"name": "Acme Corp"}),
        ("GET", "tenants/{slug}/members/"): Call(f"{base}members/", 200),
        ("POST", "tenants/{slug}/members/"): Call(
            f"{base}members/", 201, {"username": "bob"}
        ),
        ("DELETE", "tenants/{slug}/members/{username}/"): Call(
            f"{base}members/alice/", 204
        ),
        ("GET", "tenants/{slug}/exposures/"): Call(f"{base}exposures/", 200),
        ("POST", "tenants/{slug}/exposures/"): Call(
            f"{base}exposures/", 201, {"engine_id": "demo.add"}
        ),
        ("POST", "tenants/{slug}/exposures/expose-all/"): Call(
            f"{base}exposures/expose-all/", 200
        ),
        ("GET", "tenants/{slug}/exposures/{engine_id}/"): Call(
            f"{base}exposures/demo.echo/", 200
        ),
        ("PATCH", "tenants/{slug}/exposures/{engine_id}/"): Call(
            f"{base}exposures/demo.echo/", 200, {"requires_confirmation": True}
        ),
        ("DELETE", "tenants/{slug}/exposures/{engine_id}/"): Call(
            f"{base}exposures/demo.echo/", 204
        ),
        ("GET", "tenants/{slug}/tokens/"): Call(f"{base}tokens/", 200),
        ("POST", "tenants/{slug}/tokens/"): Call(
            f"{base}tokens/", 201, {"username": "bob"}
        ),
        ("DELETE", "tenants/{slug}/tokens/{prefix}/"): Call(
            f"{base}tokens/{world.token.prefix}/", 204
        ),
        ("GET", "tenants/{slug}/secrets/"): Call(f"{base}secrets/", 200),
        ("POST", "tenants/{slug}/secrets/"): Call(
            f"{base}secrets/",
            201,
            {"engine_id": "test.downstream", "name": "REGION", "value": "eu"},
        ),
        ("DELETE", "tenants/{slug}/secrets/{engine_id}/{name}/"): Call(
            f"{base}secrets/test.downstream/API_KEY/", 204
        ),
    }
    return calls[(route.method, route.path)]


@dataclass(frozen=True)
class World:
    tenant: Tenant
    empty: Tenant
    token: ApiToken
    exposure: Exposure
    membership: Membership
    secret: EngineSecret
    parked: CallApproval


@pytest.fixture
def world(db: None, secret_keys: list[str], downstream: Any) -> Iterator[World]:
    """acme: alice (member, token), demo.echo exposed and changed; globex."""
    engine = default_registry.get("demo:echo")
    assert engine is not None
    default_registry.unregister("demo:echo")  # so that expose-all can succeed
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    empty = Tenant.objects.create(slug="globex", name="Globex")
    alice = User.objects.create_user("alice")
    User.objects.create_user("bob")
    membership = Membership.objects.create(tenant=tenant, user=alice)
    exposure = bookkeeping.expose(tenant, "demo.echo")
    Exposure.objects.filter(pk=exposure.pk).update(fingerprint="old")
    issued = tokens.issue(tenant, alice)
    secret = service.set_secret(tenant, "test.downstream", "API_KEY", "k-123")
    principal = Principal(tenant.slug, "alice", issued.token.prefix)
    parked = call_approvals.park(
        tenant, principal, "demo_echo", "demo.echo", {"text": "hi"}, "0" * 64
    )
    yield World(tenant, empty, issued.token, exposure, membership, secret, parked)
    default_registry.register(engine)


def snapshot() -> dict[str, Any]:
    return {
        "tenants": list(Tenant.objects.values_list("slug", "name", "is_active")),
        "members": list(Membership.objects.values_list("tenant", "user", "role")),
        "exposures": list(
            Exposure.objects.values_list(
                "engine_id", "fingerprint", "requires_confirmation"
            )
        ),
        "parked": list(CallApproval.objects.values_list("pk", "state")),
        "tokens": list(ApiToken.objects.values_list("prefix", "user", "revoked_at")),
        "events": ExposureEvent.objects.count(),
        "secrets": list(
            EngineSecret.objects.values_list("engine_id", "name", "ciphertext")
        ),
    }


def staff_with(*codenames: str, name: str = "staff") -> User:
    user = User.objects.create_user(name, is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="mcp_gateway", codename__in=codenames
        )
    )
    return User.objects.get(pk=user.pk)  # a fresh permission cache


def viewer() -> User:
    views = Permission.objects.filter(
        content_type__app_label="mcp_gateway", codename__startswith="view_"
    )
    return staff_with(*views.values_list("codename", flat=True), name="viewer")


def matching(needs: permissions.Needs) -> list[str]:
    return [group[0] for group in needs]


def api_as(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def request(client: APIClient, route: permissions.ApiRoute, call: Call) -> Any:
    send = getattr(client, route.method.lower())
    return send(call.url, call.body, format="json") if call.body else send(call.url)


ROUTES = permissions.API_ROUTES
ROUTE_IDS = [f"{r.method} {r.path}" for r in ROUTES]
ACTIONS = permissions.ADMIN_ACTIONS
ACTION_IDS = [f"{a.model}.{a.action}" for a in ACTIONS]


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
def test_staff_with_only_view_permissions_read_but_change_nothing(world, route):
    call = api_call(route, world)
    before = snapshot()

    response = request(api_as(viewer()), route, call)

    if route.method == "GET":
        assert response.status_code == call.ok, response.content[:300]
    else:
        assert response.status_code == 403, response.content[:300]
        assert response.json()["code"] == "permission_denied"
    assert snapshot() == before


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
def test_staff_with_the_matching_permission_are_allowed(world, route):
    call = api_call(route, world)

    response = request(api_as(staff_with(*matching(route.needs))), route, call)

    assert response.status_code == call.ok, response.content[:300]


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
def test_a_superuser_is_allowed(world, route):
    call = api_call(route, world)
    root = User.objects.create_superuser("root")

    response = request(api_as(root), route, call)

    assert response.status_code == call.ok, response.content[:300]


READS = [r for r in ROUTES if r.method == "GET" and r.needs]


@pytest.mark.parametrize("route", READS, ids=[f"{r.method} {r.path}" for r in READS])
def test_staff_holding_change_without_view_may_read(world, route):
    # Reads accept view or change, as the admin does: a change permission
    # alone opens the read.
    call = api_call(route, world)
    changes = [g[1] for g in route.needs if len(g) > 1 and g[1].startswith("change_")]
    assert changes, route

    response = request(api_as(staff_with(*changes)), route, call)

    assert response.status_code == call.ok, response.content[:300]


@pytest.mark.parametrize(
    "route",
    [r for r in ROUTES if r.needs],
    ids=[i for r, i in zip(ROUTES, ROUTE_IDS, strict=True) if r.needs],
)
def test_staff_without_permissions_are_refused_even_reads(world, route):
    call = api_call(route, world)
    before = snapshot()

    response = request(api_as(staff_with()), route, call)

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert snapshot() == before


def test_the_table_covers_every_route_of_the_api():
    from mcp_gateway.api.urls import urlpatterns

    named = {p.name for p in urlpatterns if getattr(p, "name", None)}
    methods = {
        (p.name, method.upper())
        for p in urlpatterns
        if getattr(p, "name", None) and hasattr(p.callback, "actions")
        for method in p.callback.actions
        if method != "head"  # read as GET
    }
    methods |= {("schema", "GET"), ("docs", "GET")}

    assert {r.name for r in ROUTES} == named
    assert {(r.name, r.method) for r in ROUTES} == methods


# -- The admin ------------------------------------------------------------------


def admin_as(user: User) -> Client:
    client = Client()
    client.force_login(user, backend=MODEL_BACKEND)
    return client


def changelist(model: str) -> str:
    return reverse(f"admin:mcp_gateway_{model}_changelist")


def selected(action: permissions.AdminAction, world: World) -> list[int]:
    if action.model == "tenant":
        deleted = action.action == "delete_selected"
        return [world.empty.pk if deleted else world.tenant.pk]
    objects = {
        "exposure": world.exposure.pk,
        "membership": world.membership.pk,
        "apitoken": world.token.pk,
        "enginesecret": world.secret.pk,
        "callapproval": world.parked.pk,
    }
    return [objects[action.model]]


def run(client: Client, action: permissions.AdminAction, world: World) -> Any:
    data = {
        "action": action.action,
        "_selected_action": [str(pk) for pk in selected(action, world)],
        "post": "yes",  # confirms delete_selected; ignored by the others
    }
    return client.post(changelist(action.model), data)


def offered(client: Client, action: permissions.AdminAction) -> bool:
    page = client.get(changelist(action.model))
    assert page.status_code == 200
    return f'<option value="{action.action}">' in page.content.decode()


@pytest.mark.parametrize("action", ACTIONS, ids=ACTION_IDS)
def test_an_admin_action_is_neither_offered_nor_run_for_view_only_staff(world, action):
    client = admin_as(viewer())
    before = snapshot()

    was_offered = offered(client, action)
    response = run(client, action, world)

    assert not was_offered
    assert response.status_code in (200, 302)
    assert snapshot() == before


@pytest.mark.parametrize("action", ACTIONS, ids=ACTION_IDS)
def test_an_admin_action_runs_for_staff_with_its_permission(world, action):
    view = f"view_{action.model}"
    client = admin_as(staff_with(view, *matching(action.needs)))
    before = snapshot()

    was_offered = offered(client, action)
    response = run(client, action, world)

    assert was_offered
    assert response.status_code == 302
    assert snapshot() != before


@pytest.mark.parametrize("action", ACTIONS, ids=ACTION_IDS)
def test_an_admin_action_runs_for_a_superuser(world, action):
    client = admin_as(User.objects.create_superuser("root"))
    before = snapshot()

    was_offered = offered(client, action)
    response = run(client, action, world)

    assert was_offered
    assert response.status_code == 302
    assert snapshot() != before


def test_every_admin_action_is_in_the_table_and_declares_its_permissions(rf, db):
    request = rf.get("/")
    request.user = User.objects.create_superuser("root")
    declared = set()
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label != "mcp_gateway":
            continue
        model_name = str(model._meta.model_name)
        actions: dict[str, Any] = model_admin.get_actions(request)
        for func, name, _label in actions.values():
            declared.add((model_name, name))
            wanted = permissions.codenames(
                permissions.admin_action(model_name, name).needs
            )
            allowed = list(getattr(func, "allowed_permissions", []))
            if name == "delete_selected":
                assert allowed == ["delete"]
                assert wanted == {f"delete_{model_name}"}
            else:
                assert set(allowed) == wanted

    assert declared == {(a.model, a.action) for a in ACTIONS}


# -- The docs --------------------------------------------------------------------


def test_docs_security_shows_exactly_the_table():
    text = DOCS.read_text(encoding="utf-8")
    rows = [
        line for line in text.splitlines() if re.match(r"\| (API|admin|metrics) ", line)
    ]

    assert permissions.markdown_table() in text
    assert rows == permissions.table_rows()


# -- Token routes (the metrics view) ----------------------------------------------


TOKEN_ROUTES = permissions.TOKEN_ROUTES
TOKEN_IDS = [f"{t.method} {t.path}" for t in TOKEN_ROUTES]


@pytest.mark.parametrize("route", TOKEN_ROUTES, ids=TOKEN_IDS)
def test_a_token_route_is_absent_until_its_token_is_set(db, settings, route):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, route.token: ""}
    url = reverse(route.name)
    root = admin_as(User.objects.create_superuser("root"))

    assert Client().get(url, HTTP_AUTHORIZATION="Bearer x").status_code == 404
    assert root.get(url).status_code == 404


@pytest.mark.parametrize("route", TOKEN_ROUTES, ids=TOKEN_IDS)
def test_a_token_route_needs_its_token_and_nothing_else(db, settings, route):
    secret = "s3cret-metrics-token"
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, route.token: secret}
    url = reverse(route.name)
    root = admin_as(User.objects.create_superuser("root"))

    missing = Client().get(url)
    wrong = Client().get(url, HTTP_AUTHORIZATION="Bearer not-it")
    staff = root.get(url)
    right = Client().get(url, HTTP_AUTHORIZATION=f"Bearer {secret}")
    posted = Client().post(url, HTTP_AUTHORIZATION=f"Bearer {secret}")

    assert [missing.status_code, wrong.status_code, staff.status_code] == [401] * 3
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert secret.encode() not in missing.content + wrong.content
    assert right.status_code == 200
    assert posted.status_code == 405


# -- The admin's page buttons (each needs what its action's row names) ------------


@dataclass(frozen=True)
class Button:
    name: str
    action: permissions.AdminAction
    url_name: str
    target: str
    """Which object of the world the page is about."""


BUTTONS = [
    Button(
        "exposure approve",
        permissions.admin_action("exposure", "approve_selected"),
        "admin:mcp_gateway_exposure_approve",
        "exposure",
    ),
    Button(
        "token revoke",
        permissions.admin_action("apitoken", "revoke_selected"),
        "admin:mcp_gateway_apitoken_revoke",
        "token",
    ),
    Button(
        "tenant unexpose all",
        permissions.admin_action("tenant", "unexpose_all"),
        "admin:mcp_gateway_tenant_unexpose_all",
        "tenant",
    ),
]


def button_url(button: Button, world: World) -> str:
    return reverse(button.url_name, args=[getattr(world, button.target).pk])


@pytest.mark.parametrize("button", BUTTONS, ids=[b.name for b in BUTTONS])
def test_a_page_button_refuses_view_only_staff_and_changes_nothing(world, button):
    client = admin_as(viewer())
    before = snapshot()

    asked = client.get(button_url(button, world))
    confirmed = client.post(button_url(button, world), {"post": "yes"})

    assert (asked.status_code, confirmed.status_code) == (403, 403)
    assert snapshot() == before


@pytest.mark.parametrize("button", BUTTONS, ids=[b.name for b in BUTTONS])
def test_a_page_button_asks_then_acts_for_staff_with_its_permission(world, button):
    view = f"view_{button.action.model}"
    client = admin_as(staff_with(view, *matching(button.action.needs)))
    before = snapshot()

    asked = client.get(button_url(button, world))
    unchanged = snapshot()
    confirmed = client.post(button_url(button, world), {"post": "yes"})

    assert asked.status_code == 200
    assert unchanged == before
    assert confirmed.status_code == 302
    assert snapshot() != before


def test_the_engines_page_needs_what_the_engines_route_needs(world):
    url = reverse("admin:mcp_gateway_installedengine_changelist")
    route = permissions.api_route("engines", "GET")
    assert route is not None
    nobody = staff_with(name="plain")

    refused = admin_as(nobody).get(url)
    shown = admin_as(staff_with(*matching(route.needs), name="reader")).get(url)

    assert refused.status_code == 403
    assert shown.status_code == 200
    assert "demo_add" in shown.content.decode()
