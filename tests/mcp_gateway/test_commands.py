"""The management commands: exact names, arguments, output and errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, bus, tokens
from mcp_gateway.audit.models import ExposureEvent
from mcp_gateway.fingerprint import fingerprint
from mcp_gateway.models import ApiToken, Exposure, Membership, Tenant

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def exposed(tenant: Tenant) -> set[str]:
    return set(tenant.exposures.values_list("engine_id", flat=True))


@pytest.fixture
def cmd_tenant(db: None) -> Tenant:
    return Tenant.objects.create(slug="acme", name="Acme")


@pytest.fixture
def cmd_user(db: None) -> User:
    return User.objects.create_user("bob")


@pytest.fixture
def cmd_without_collision() -> Iterator[None]:
    """Uninstall ``demo:echo`` so that ``expose_all`` can succeed."""
    engine = default_registry.get("demo:echo")
    assert engine is not None
    default_registry.unregister("demo:echo")
    yield
    default_registry.register(engine)


# mcp_tenant


def test_tenant_create_stores_name_and_normalized_origins(db):
    out = run(
        "mcp_tenant",
        "create",
        "acme",
        "--name",
        "Acme Inc",
        "--allowed-origin",
        "https://App.example.com:443",
        "--allowed-origin",
        "http://localhost:3000",
    )

    tenant = Tenant.objects.get(slug="acme")
    assert out == "Created tenant 'acme'.\n"
    assert tenant.name == "Acme Inc"
    assert tenant.allowed_origins == [
        "https://app.example.com",
        "http://localhost:3000",
    ]
    assert tenant.is_active


def test_tenant_create_defaults_the_name_to_the_slug(db):
    run("mcp_tenant", "create", "acme")

    assert Tenant.objects.get(slug="acme").name == "acme"


@pytest.mark.parametrize(
    "origin",
    [
        "https://app.example.com/",
        "https://app.example.com/path",
        "ftp://app.example.com",
        "app.example.com",
        "https://app.example.com?x=1",
        "https://user@app.example.com",
        "https://app.example.com:99999",
    ],
)
def test_tenant_create_refuses_a_bad_origin_and_creates_nothing(db, origin):
    with pytest.raises(CommandError, match="not"):
        run("mcp_tenant", "create", "acme", "--allowed-origin", origin)

    assert not Tenant.objects.exists()


def test_tenant_create_refuses_a_taken_slug(cmd_tenant):
    with pytest.raises(CommandError, match="Tenant 'acme' already exists"):
        run("mcp_tenant", "create", "acme")


def test_tenant_create_refuses_a_bad_slug(db):
    with pytest.raises(CommandError, match="slug"):
        run("mcp_tenant", "create", "not a slug")

    assert not Tenant.objects.exists()


def test_tenant_list_shows_each_tenant(cmd_tenant):
    Tenant.objects.create(slug="globex", name="Globex", is_active=False)

    lines = run("mcp_tenant", "list").splitlines()

    assert lines[0].split() == [
        "SLUG",
        "NAME",
        "ACTIVE",
        "TOOLS",
        "HELD",
        "STALE",
        "MEMBERS",
    ]
    assert lines[1].split() == ["acme", "Acme", "yes", "0", "0", "0", "0"]
    assert lines[2].split() == ["globex", "Globex", "no", "0", "0", "0", "0"]


def test_tenant_list_counts_held_and_stale_tools(cmd_tenant):
    bookkeeping.expose_many(cmd_tenant, ["demo.echo", "demo.add", "demo.slow"])
    Exposure.objects.filter(engine_id="demo.echo").update(fingerprint="old")
    Exposure.objects.filter(engine_id="demo.add").update(engine_id="gone.engine")

    lines = run("mcp_tenant", "list").splitlines()

    assert lines[1].split() == ["acme", "Acme", "yes", "3", "1", "1", "0"]


def test_tenant_list_says_when_there_are_none(db):
    assert run("mcp_tenant", "list") == "No tenants.\n"


def test_tenant_disable_deactivates_the_tenant(cmd_tenant):
    out = run("mcp_tenant", "disable", "acme")

    cmd_tenant.refresh_from_db()
    assert out == "Disabled tenant 'acme'.\n"
    assert not cmd_tenant.is_active


def test_tenant_disable_of_an_unknown_tenant_is_an_error(db):
    with pytest.raises(CommandError, match="No tenant with slug 'nope'"):
        run("mcp_tenant", "disable", "nope")


def test_add_member_adds_an_existing_user_as_member(cmd_tenant, cmd_user):
    out = run("mcp_tenant", "add-member", "acme", "bob")

    membership = Membership.objects.get(tenant=cmd_tenant, user=cmd_user)
    assert membership.role == "member"
    assert out == "bob joined tenant 'acme' as member.\n"


def test_add_member_creates_the_user_and_sets_the_role(cmd_tenant):
    run("mcp_tenant", "add-member", "acme", "carol", "--create-user", "--role", "admin")

    membership = Membership.objects.get(tenant=cmd_tenant, user__username="carol")
    assert membership.role == "admin"


def test_add_member_changes_the_role_of_a_member(cmd_tenant, cmd_user):
    Membership.objects.create(tenant=cmd_tenant, user=cmd_user)

    run("mcp_tenant", "add-member", "acme", "bob", "--role", "admin")

    assert Membership.objects.get(tenant=cmd_tenant, user=cmd_user).role == "admin"


def test_add_member_refuses_an_unknown_user(cmd_tenant):
    with pytest.raises(CommandError, match="No user named 'carol'"):
        run("mcp_tenant", "add-member", "acme", "carol")

    assert not User.objects.filter(username="carol").exists()


def test_add_member_refuses_an_unknown_role(cmd_tenant, cmd_user):
    with pytest.raises(CommandError, match="Unknown role 'owner'"):
        run("mcp_tenant", "add-member", "acme", "bob", "--role", "owner")

    assert not Membership.objects.exists()


# mcp_expose / mcp_unexpose


def test_expose_exposes_the_named_engines(cmd_tenant):
    out = run("mcp_expose", "acme", "demo.echo", "demo.add")

    assert exposed(cmd_tenant) == {"demo.echo", "demo.add"}
    assert out == "Exposed 2 engines to 'acme': demo_echo, demo_add.\n"


def test_expose_can_require_confirmation_and_engines_shows_it(cmd_tenant):
    run("mcp_expose", "acme", "demo.echo", "--require-confirmation")
    run("mcp_expose", "acme", "demo.add")

    rows = json.loads(run("mcp_engines", "--tenant", "acme", "--json"))
    table = run("mcp_engines", "--tenant", "acme").splitlines()

    assert {r["id"]: r["requires_confirmation"] for r in rows} == {
        "demo.add": False,
        "demo.echo": True,
    }
    assert [line.split()[-1] for line in table[1:]] == ["no", "yes"]
    event = ExposureEvent.objects.get(action="confirmation")
    assert (event.engine_ids, event.via) == (["demo.echo"], "command")


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, bool]]:
    """Each catalog change as published: the tenant's exposures (engine id:
    requires confirmation) at that moment."""
    seen: list[dict[str, bool]] = []

    def spy(event: Any, **kwargs: Any) -> None:
        rows = Exposure.objects.filter(tenant_id=event.tenant)
        seen.append(dict(rows.values_list("engine_id", "requires_confirmation")))

    monkeypatch.setattr(bus, "publish", spy)
    return seen


def test_expose_with_confirmation_publishes_one_change_already_marked(
    cmd_tenant, published
):
    run("mcp_expose", "acme", "demo.echo", "demo.add", "--require-confirmation")

    assert published == [{"demo.echo": True, "demo.add": True}]
    actions = ExposureEvent.objects.values_list("action", "catalog_version")
    version = Tenant.objects.get(pk=cmd_tenant.pk).catalog_version
    assert sorted(actions) == [("confirmation", version), ("expose", version)]


@pytest.mark.usefixtures("cmd_without_collision")
def test_expose_all_with_confirmation_publishes_one_change_already_marked(
    cmd_tenant, published
):
    run("mcp_expose", "acme", "--all", "--require-confirmation")

    assert published == [dict.fromkeys(default_registry.ids(), True)]


def test_expose_with_confirmation_marks_an_engine_already_exposed(cmd_tenant):
    run("mcp_expose", "acme", "demo.echo")

    out = run("mcp_expose", "acme", "demo.echo", "demo.add", "--require-confirmation")
    again = run("mcp_expose", "acme", "demo.echo", "--require-confirmation")

    marked = dict(
        cmd_tenant.exposures.values_list("engine_id", "requires_confirmation")
    )
    assert marked == {"demo.echo": True, "demo.add": True}
    assert out == (
        "Exposed 1 engine to 'acme': demo_add.\ndemo_echo now requires confirmation.\n"
    )
    assert again == "demo_echo already requires confirmation.\n"


@pytest.mark.usefixtures("cmd_without_collision")
def test_expose_all_with_confirmation_marks_the_exposed_ones_too(cmd_tenant):
    run("mcp_expose", "acme", "demo.echo")

    out = run("mcp_expose", "acme", "--all", "--require-confirmation")

    assert set(
        cmd_tenant.exposures.values_list("requires_confirmation", flat=True)
    ) == {True}
    assert out.endswith("demo_echo now requires confirmation.\n")


def test_expose_is_atomic_one_unknown_engine_exposes_none(cmd_tenant):
    with pytest.raises(CommandError, match="No engine with id 'nope' is installed"):
        run("mcp_expose", "acme", "demo.echo", "nope")

    assert exposed(cmd_tenant) == set()


def test_expose_of_a_colliding_engine_names_both_engines(cmd_tenant):
    run("mcp_expose", "acme", "demo.echo")

    with pytest.raises(CommandError, match=r"'demo:echo' and 'demo\.echo'"):
        run("mcp_expose", "acme", "demo.add", "demo:echo")

    assert exposed(cmd_tenant) == {"demo.echo"}


def test_expose_of_an_exposed_engine_is_a_duplicate(cmd_tenant):
    run("mcp_expose", "acme", "demo.echo")

    with pytest.raises(CommandError, match="already exposed"):
        run("mcp_expose", "acme", "demo.echo")


def test_expose_to_an_unknown_tenant_is_an_error(db):
    with pytest.raises(CommandError, match="No tenant with slug 'nope'"):
        run("mcp_expose", "nope", "demo.echo")


@pytest.mark.parametrize("args", [(), ("demo.echo", "--all")])
def test_expose_needs_either_ids_or_all(cmd_tenant, args):
    with pytest.raises(CommandError, match="either ENGINE_ID"):
        run("mcp_expose", "acme", *args)


@pytest.mark.usefixtures("cmd_without_collision")
def test_expose_all_exposes_every_installed_engine_idempotently(cmd_tenant):
    run("mcp_expose", "acme", "--all")
    out = run("mcp_expose", "acme", "--all")

    assert exposed(cmd_tenant) == set(default_registry.ids())
    assert out == "Every installed engine is already exposed to 'acme'.\n"


def test_expose_all_with_a_collision_exposes_the_rest_and_reports_the_skipped(
    cmd_tenant,
):
    out, err = StringIO(), StringIO()
    call_command("mcp_expose", "acme", "--all", stdout=out, stderr=err)

    assert exposed(cmd_tenant) == set(default_registry.ids()) - {
        "demo.echo",
        "demo:echo",
    }
    skipped = err.getvalue().splitlines()
    assert [line.split(": ")[0] for line in skipped] == [
        "Skipped demo.echo",
        "Skipped demo:echo",
    ]
    assert "both derive the tool name 'demo_echo'" in skipped[0]
    assert out.getvalue().startswith("Exposed ")


def test_unexpose_removes_the_named_engines(cmd_tenant):
    bookkeeping.expose_many(cmd_tenant, ["demo.echo", "demo.add", "demo.whoami"])

    out = run("mcp_unexpose", "acme", "demo.echo", "demo.add")

    assert exposed(cmd_tenant) == {"demo.whoami"}
    assert out == "Unexposed 2 engines from 'acme'.\n"


def test_unexpose_of_an_engine_not_exposed_removes_nothing(cmd_tenant):
    bookkeeping.expose(cmd_tenant, "demo.echo")

    with pytest.raises(CommandError, match=r"Not exposed to 'acme': demo\.add"):
        run("mcp_unexpose", "acme", "demo.echo", "demo.add")

    assert exposed(cmd_tenant) == {"demo.echo"}


def test_unexpose_removes_a_stale_exposure(cmd_tenant):
    Exposure.objects.create(tenant=cmd_tenant, engine_id="gone.engine", tool_name="x")

    run("mcp_unexpose", "acme", "gone.engine")

    assert exposed(cmd_tenant) == set()


def test_unexpose_all_clears_the_tenant(cmd_tenant):
    bookkeeping.expose_many(cmd_tenant, ["demo.echo", "demo.add"])
    version = Tenant.objects.get(pk=cmd_tenant.pk).catalog_version

    out = run("mcp_unexpose", "acme", "--all")

    assert exposed(cmd_tenant) == set()
    assert out == "Unexposed 2 engines from 'acme'.\n"
    assert Tenant.objects.get(pk=cmd_tenant.pk).catalog_version > version


def test_unexpose_from_an_unknown_tenant_is_an_error(db):
    with pytest.raises(CommandError, match="No tenant"):
        run("mcp_unexpose", "nope", "--all")


# mcp_approve


def test_approve_approves_the_named_engines_through_bookkeeping(cmd_tenant):
    bookkeeping.expose_many(cmd_tenant, ["demo.echo", "demo.add"])
    Exposure.objects.update(fingerprint="old")
    version = Tenant.objects.get(pk=cmd_tenant.pk).catalog_version

    out = run("mcp_approve", "acme", "demo.add")

    assert out == "Approved 1 exposure of 'acme': demo_add.\n"
    assert bookkeeping.state_of(Exposure.objects.get(engine_id="demo.add")) == "live"
    assert bookkeeping.state_of(Exposure.objects.get(engine_id="demo.echo")) == "held"
    assert Tenant.objects.get(pk=cmd_tenant.pk).catalog_version == version + 1
    event = ExposureEvent.objects.latest("pk")
    assert (event.action, event.engine_ids, event.via) == (
        "approve",
        ["demo.add"],
        "command",
    )


def test_approve_all_approves_every_changed_exposure(cmd_tenant):
    bookkeeping.expose_many(cmd_tenant, ["demo.echo", "demo.add", "demo.whoami"])
    Exposure.objects.exclude(engine_id="demo.whoami").update(fingerprint="old")

    out = run("mcp_approve", "acme", "--all")
    again = run("mcp_approve", "acme", "--all")

    assert out == "Approved 2 exposures of 'acme': demo_add, demo_echo.\n"
    assert again == "No changed exposure of 'acme' to approve.\n"


def test_approve_of_an_engine_not_exposed_changes_nothing(cmd_tenant):
    bookkeeping.expose(cmd_tenant, "demo.echo")
    Exposure.objects.update(fingerprint="old")

    with pytest.raises(CommandError, match=r"'demo\.add' is not exposed"):
        run("mcp_approve", "acme", "demo.echo", "demo.add")

    assert Exposure.objects.get().fingerprint == "old"


@pytest.mark.parametrize("args", [[], ["demo.echo", "--all"]])
def test_approve_needs_engine_ids_or_all(cmd_tenant, args):
    with pytest.raises(CommandError, match="either ENGINE_ID"):
        run("mcp_approve", "acme", *args)


# mcp_engines


def test_engines_json_lists_every_engine_with_its_fingerprint(cmd_tenant):
    bookkeeping.expose_many(cmd_tenant, ["demo.echo", "demo.add"])
    Exposure.objects.filter(engine_id="demo.add").update(fingerprint="old")

    engines = json.loads(run("mcp_engines", "--json"))

    assert [e["id"] for e in engines] == default_registry.ids()
    keys = {"id", "tool_name", "version", "title", "fingerprint", "exposures"}
    assert all(set(e) == keys for e in engines)
    echo = next(e for e in engines if e["id"] == "demo.echo")
    assert echo == {
        "id": "demo.echo",
        "tool_name": "demo_echo",
        "version": "1.0.0",
        "title": "Echo",
        "fingerprint": fingerprint(default_registry.get("demo.echo")),
        "exposures": {"live": 1},
    }
    add = next(e for e in engines if e["id"] == "demo.add")
    assert add["exposures"] == {"held": 1}


def test_engines_of_a_tenant_show_each_status(cmd_tenant, settings):
    bookkeeping.expose_many(cmd_tenant, ["demo.echo", "demo.add"])
    Exposure.objects.filter(engine_id="demo.add").update(fingerprint="old")
    Exposure.objects.create(tenant=cmd_tenant, engine_id="gone.engine", tool_name="x")

    held = {
        r["id"]: r["status"]
        for r in json.loads(run("mcp_engines", "--tenant", "acme", "--json"))
    }
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "DRIFT_POLICY": "serve"}
    table = run("mcp_engines", "--tenant", "acme")

    assert held == {"demo.echo": "live", "demo.add": "held", "gone.engine": "stale"}
    assert table.splitlines()[0].split() == [
        "ID",
        "TOOL",
        "NAME",
        "STATUS",
        "APPROVED",
        "INSTALLED",
        "CONFIRM",
    ]
    assert any(
        line.split()[:3] == ["demo.add", "demo_add", "changed"]
        for line in table.splitlines()
    )


def test_engines_table_has_a_row_per_engine(db):
    lines = run("mcp_engines").splitlines()

    assert lines[0].split() == [
        "ID",
        "TOOL",
        "NAME",
        "VERSION",
        "TITLE",
        "FINGERPRINT",
        "EXPOSURES",
    ]
    assert len(lines) == len(default_registry) + 1
    assert any(line.split()[:2] == ["demo:echo", "demo_echo"] for line in lines)


# mcp_token


def test_token_create_prints_only_a_token_that_authenticates(cmd_tenant, cmd_user):
    out = run("mcp_token", "create", "acme", "--user", "bob")

    secret = out.removesuffix("\n")
    assert "\n" not in secret
    assert secret.startswith("mcpgw_")
    assert authenticate(None, bearer_token=secret, tenant=cmd_tenant) == cmd_user
    assert Membership.objects.filter(tenant=cmd_tenant, user=cmd_user).exists()
    assert ApiToken.objects.get().scopes == ["mcp:tools"]


def test_token_create_with_create_user_scopes_and_lifetime(cmd_tenant):
    run(
        "mcp_token",
        "create",
        "acme",
        "--user",
        "carol",
        "--create-user",
        "--scope",
        "mcp:tools:read",
        "--scope",
        "mcp:tools",
        "--expires-in",
        "3600",
    )

    token = ApiToken.objects.get(user__username="carol")
    assert token.scopes == ["mcp:tools:read", "mcp:tools"]
    assert token.expires_at is not None


def test_token_create_for_an_unknown_user_is_an_error(cmd_tenant):
    with pytest.raises(CommandError, match="No user named 'carol'"):
        run("mcp_token", "create", "acme", "--user", "carol")

    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--scope", "admin"), "Unknown scope"),
        (("--expires-in", "0"), "positive"),
    ],
)
def test_token_create_refuses_bad_options(cmd_tenant, cmd_user, extra, message):
    with pytest.raises(CommandError, match=message):
        run("mcp_token", "create", "acme", "--user", "bob", *extra)

    assert not ApiToken.objects.exists()


def test_token_create_for_an_unknown_tenant_is_an_error(cmd_user):
    with pytest.raises(CommandError, match="No tenant"):
        run("mcp_token", "create", "nope", "--user", "bob")


@pytest.mark.parametrize("by_prefix", [True, False])
def test_token_revoke_by_token_or_prefix(cmd_tenant, cmd_user, by_prefix):
    issued = tokens.issue(cmd_tenant, cmd_user)
    argument = issued.token.prefix if by_prefix else issued.secret

    out = run("mcp_token", "revoke", argument)

    assert out.startswith(f"Revoked token {issued.token.prefix}")
    assert issued.secret not in out
    assert authenticate(None, bearer_token=issued.secret, tenant=cmd_tenant) is None


def test_token_revoke_of_an_unknown_token_is_an_error(db):
    with pytest.raises(CommandError, match="No such token"):
        run("mcp_token", "revoke", "abcdef")


def test_token_list_shows_prefixes_and_states_never_secrets(cmd_tenant, cmd_user):
    live = tokens.issue(cmd_tenant, cmd_user)
    revoked = tokens.issue(cmd_tenant, cmd_user, scopes=["mcp:tools:read"])
    tokens.revoke(revoked.token.prefix)

    out = run("mcp_token", "list", "acme")

    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows[live.token.prefix][1:4] == ["bob", "mcp:tools", "active"]
    assert rows[revoked.token.prefix][1:4] == ["bob", "mcp:tools:read", "revoked"]
    assert live.secret.split("_")[2] not in out


def test_token_list_of_an_unknown_tenant_is_an_error(db):
    with pytest.raises(CommandError, match="No tenant"):
        run("mcp_token", "list", "nope")


# mcp_demo


def demo_output(out: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


@pytest.mark.usefixtures("cmd_without_collision")
def test_demo_sets_up_tenant_staff_login_and_a_working_token(db):
    out = run("mcp_demo")

    tenant = Tenant.objects.get(slug="demo")
    admin = User.objects.get(username="admin")
    lines = demo_output(out)
    assert tenant.name == "Demo"
    assert exposed(tenant) == set(default_registry.ids())
    assert admin.is_staff
    assert admin.is_superuser
    assert admin.check_password(lines["Password"])
    assert lines["MCP URL"] == "http://testserver/t/demo/mcp"
    assert authenticate(None, bearer_token=lines["Token"], tenant=tenant) == admin


@pytest.mark.usefixtures("cmd_without_collision")
def test_demo_is_idempotent_and_keeps_the_password(db):
    first = demo_output(run("mcp_demo"))

    out = run("mcp_demo")

    tenant = Tenant.objects.get(slug="demo")
    assert Tenant.objects.count() == 1
    assert User.objects.count() == 1
    assert "Password" not in demo_output(out)
    assert "exists" in out
    assert User.objects.get().check_password(first["Password"])
    assert exposed(tenant) == set(default_registry.ids())


@pytest.mark.usefixtures("cmd_without_collision")
def test_demo_reset_password_sets_a_new_password(db):
    first = demo_output(run("mcp_demo"))

    second = demo_output(run("mcp_demo", "--reset-password"))

    assert second["Password"] != first["Password"]
    assert User.objects.get().check_password(second["Password"])


# The real command line: stdout, stderr, exit status, no traceback.


def manage(database: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env: dict[str, Any] = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"sqlite:///{database}",
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_command_line_success_goes_to_stdout_and_errors_are_one_line(tmp_path):
    database = tmp_path / "db.sqlite3"
    assert manage(database, "migrate", "-v0").returncode == 0

    created = manage(database, "mcp_tenant", "create", "acme")
    token = manage(
        database, "mcp_token", "create", "acme", "--user", "x", "--create-user"
    )
    failed = manage(database, "mcp_expose", "acme", "demo.echo", "nope")
    exposures = manage(database, "mcp_engines", "--json")

    assert (created.returncode, created.stdout, created.stderr) == (
        0,
        "Created tenant 'acme'.\n",
        "",
    )
    assert token.returncode == 0
    assert token.stdout.count("\n") == 1
    assert token.stdout.startswith("mcpgw_")
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr == "CommandError: No engine with id 'nope' is installed.\n"
    assert "Traceback" not in failed.stderr
    assert exposures.returncode == 0
