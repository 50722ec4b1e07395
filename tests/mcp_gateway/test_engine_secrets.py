"""Per-tenant engine secrets, over HTTP: an engine gets its own, and no
response, log line (DEBUG included), audit row or API payload holds one."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from rest_framework.test import APIClient

from engines_app.engine import Engine
from engines_app.errors import InvalidEngineError
from engines_app.registry import validate_engine
from mcp_gateway import bookkeeping, bus
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.engine_secrets import service, store
from mcp_gateway.engine_secrets.keys import SecretKeyError
from mcp_gateway.engine_secrets.models import EngineSecret
from mcp_gateway.models import Tenant
from tests.rpc import post_rpc

KEY = "sk-live-4f9d2c7e1b8a6035"
REGION = "eu-west-7"


@pytest.fixture(autouse=True, scope="module")
def _close_the_bus() -> Iterator[None]:
    """Reading secrets subscribes to the bus, which listens on a connection
    of its own (on PostgreSQL, to the test database): close it after."""
    yield
    bus.close()


@pytest.fixture
def acme(tenant: Tenant, secret_keys: list[str], downstream: Engine) -> Tenant:
    bookkeeping.expose(tenant, "test.downstream")
    return tenant


@pytest.fixture
def with_secrets(acme: Tenant, staff: User) -> Tenant:
    service.set_secret(acme, "test.downstream", "API_KEY", KEY, by=staff)
    service.set_secret(acme, "test.downstream", "REGION", REGION, by=staff)
    return acme


def call(client: Client, token: str, mode: str = "ok") -> Any:
    response = post_rpc(
        client,
        token,
        "tools/call",
        {"name": "test_downstream", "arguments": {"mode": mode}},
    )
    assert response.status_code == 200, response.content
    return response


def result_of(response: Any) -> dict[str, Any]:
    return dict(response.json()["result"])


def everything_stored() -> str:
    """Every audit row and secret row, as text."""
    calls = list(ToolCall.objects.values())
    secrets = list(EngineSecret.objects.values())
    return json.dumps([calls, secrets], default=str)


def test_an_engine_reads_its_tenants_secrets_by_name(client, token, with_secrets):
    result = result_of(call(client, token))

    assert result["isError"] is False
    assert result["structuredContent"] == {
        "key_length": len(KEY),
        "names": ["API_KEY", "REGION"],
    }


def test_another_tenants_secret_is_never_handed_over(
    client, token, with_secrets, other_tenant
):
    service.set_secret(other_tenant, "test.downstream", "API_KEY", "other-tenant-key")
    service.set_secret(other_tenant, "test.downstream", "REGION", "x")

    result = result_of(call(client, token))

    assert result["structuredContent"]["key_length"] == len(KEY)


@pytest.mark.parametrize("mode", ["ok", "echo", "raise", "engine_error"])
def test_a_secret_never_appears_in_a_response_a_log_line_or_an_audit_row(
    client, token, with_secrets, caplog, settings, mode
):
    settings.DEBUG = True  # SQL logging too
    with caplog.at_level(logging.DEBUG):
        response = call(client, token, mode)

    body = response.content.decode()
    assert KEY not in body
    assert REGION not in body
    assert KEY not in caplog.text
    assert REGION not in caplog.text
    assert KEY not in everything_stored()
    if mode == "echo":
        assert result_of(response)["structuredContent"] == {
            "key": "[secret]",
            "region": "[secret]",
        }
    if mode == "raise":
        assert "downstream refused the key [secret]" in caplog.text


def test_a_missing_secret_answers_an_error_naming_it_and_runs_nothing(
    client, token, acme
):
    service.set_secret(acme, "test.downstream", "API_KEY", KEY)

    result = result_of(call(client, token))

    assert result["isError"] is True
    error = json.loads(result["content"][0]["text"])
    assert error["code"] == "MISSING_SECRET"
    assert "'REGION'" in error["message"]
    assert KEY not in json.dumps(result)


def test_a_warm_worker_reads_secrets_without_a_query(
    principal_cache, client, token, with_secrets, django_assert_num_queries
):
    call(client, token)  # cold: the keys are checked and the secrets read

    with django_assert_num_queries(1):  # the audit row (the principal is kept)
        result = result_of(call(client, token))

    assert result["isError"] is False


def test_a_replaced_secret_is_read_anew_once_the_change_commits(
    client, token, with_secrets, django_capture_on_commit_callbacks
):
    call(client, token)
    with django_capture_on_commit_callbacks(execute=True):
        service.set_secret(with_secrets, "test.downstream", "API_KEY", "short")

    result = result_of(call(client, token))

    assert result["structuredContent"]["key_length"] == len("short")


def test_a_change_on_the_bus_drops_what_the_process_keeps(with_secrets):
    assert store.for_engine(with_secrets.pk, "test.downstream")["API_KEY"] == KEY
    EngineSecret.objects.filter(name="API_KEY").update(
        ciphertext=EngineSecret.objects.get(name="REGION").ciphertext
    )  # as another process would change it

    store._on_event(bus.SecretsChanged(tenant=with_secrets.pk, engine="other"))
    assert store.cached(with_secrets.pk, "test.downstream") is not None
    store._on_event(
        bus.SecretsChanged(tenant=with_secrets.pk, engine="test.downstream")
    )

    assert store.cached(with_secrets.pk, "test.downstream") is None
    assert store.for_engine(with_secrets.pk, "test.downstream")["API_KEY"] == REGION


def test_a_resync_forgets_every_kept_secret(with_secrets):
    store.for_engine(with_secrets.pk, "test.downstream")
    store._on_event(bus.Resync())

    assert store.cached(with_secrets.pk, "test.downstream") is None


def test_the_secrets_change_event_round_trips_on_the_wire():
    from mcp_gateway.bus import events

    event = events.SecretsChanged(tenant=3, engine="crm.lookup")
    payload = json.loads(events.encode(events.secrets_payload(event)))

    assert payload == {"tenant": 3, "engine": "crm.lookup"}
    assert events.decode_secrets(payload) == event


# -- Keys: rotation, and refusing to start ----------------------------------------


def test_rotation_re_encrypts_under_the_newest_key(
    client, token, with_secrets, settings
):
    from tests.conftest import SECRET_KEY_A, SECRET_KEY_B

    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "SECRET_KEYS": [SECRET_KEY_B, SECRET_KEY_A],
    }
    before = set(EngineSecret.objects.values_list("ciphertext", flat=True))

    call_command("mcp_secrets", "rotate", stdout=(out := _Out()))

    assert "Re-encrypted 2 secrets of 2" in out.text
    assert before.isdisjoint(EngineSecret.objects.values_list("ciphertext", flat=True))
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "SECRET_KEYS": [SECRET_KEY_B]}
    store.clear()
    assert result_of(call(client, token))["structuredContent"]["key_length"] == len(KEY)


class _Out:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        return None


def test_a_malformed_key_refuses_to_start_without_showing_it(settings, db):
    bad = "not-a-fernet-key-but-a-secret-anyway"
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "SECRET_KEYS": [bad]}
    from django.core.checks import run_checks

    from mcp_gateway.wsgi import BoundaryGuard

    with pytest.raises(SecretKeyError) as refused:
        BoundaryGuard(lambda environ, start: [])
    errors = [e for e in run_checks() if e.id == "mcp_gateway.E040"]

    assert bad not in str(refused.value)
    assert "entry 0" in str(refused.value)
    assert len(errors) == 1
    assert bad not in errors[0].msg


def test_a_wrong_key_refuses_to_start_and_fails_calls_without_a_leak(
    client, token, with_secrets, settings, caplog
):
    from tests.conftest import SECRET_KEY_A, SECRET_KEY_B

    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "SECRET_KEYS": [SECRET_KEY_B]}
    from django.core.checks import run_checks

    from mcp_gateway.asgi import BoundaryGuard

    async def app(scope: Any, receive: Any, send: Any) -> None:
        return None

    with pytest.raises(SecretKeyError) as refused:
        BoundaryGuard(app)
    errors = [
        e for e in run_checks(databases=["default"]) if e.id == "mcp_gateway.E041"
    ]
    store.clear()
    with caplog.at_level(logging.DEBUG):
        result = result_of(call(client, token))

    for text in (str(refused.value), errors[0].msg, caplog.text, json.dumps(result)):
        assert KEY not in text
        assert SECRET_KEY_A not in text
        assert SECRET_KEY_B not in text
    assert json.loads(result["content"][0]["text"])["code"] == "SECRETS_UNAVAILABLE"


def test_no_keys_with_stored_secrets_refuses_too(with_secrets, settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "SECRET_KEYS": []}

    with pytest.raises(SecretKeyError, match="does not hold"):
        store.startup_check()


def test_setting_a_secret_without_keys_is_a_clear_error(tenant, downstream):
    with pytest.raises(SecretKeyError, match="SECRET_KEYS"):
        service.set_secret(tenant, "test.downstream", "API_KEY", KEY)

    assert not EngineSecret.objects.exists()


def test_an_undeclared_name_or_an_unknown_engine_is_refused(acme):
    with pytest.raises(service.SecretError, match="declares: API_KEY, REGION"):
        service.set_secret(acme, "test.downstream", "PASSWORD", KEY)
    with pytest.raises(service.SecretError, match="No installed engine"):
        service.set_secret(acme, "nope", "API_KEY", KEY)


def test_an_engine_declaring_a_malformed_secret_name_is_invalid():
    class Bad(Engine):
        id = "bad.secret"
        name = "Bad"
        description = "Declares a name no environment would hold."
        secrets = ("9 lives",)

    with pytest.raises(InvalidEngineError, match="secret name"):
        validate_engine(Bad())


# -- The admin ---------------------------------------------------------------------


@pytest.fixture
def admin_client_(staff: User) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def test_the_admin_sets_a_secret_and_never_shows_it_again(admin_client_, acme):
    response = admin_client_.post(
        "/admin/mcp_gateway/enginesecret/add/",
        {"tenant": acme.pk, "secret": "test.downstream|API_KEY", "value": KEY},
    )
    assert response.status_code == 302, response.content
    secret = EngineSecret.objects.get()

    page = admin_client_.get(f"/admin/mcp_gateway/enginesecret/{secret.pk}/change/")
    listing = admin_client_.get("/admin/mcp_gateway/enginesecret/")
    history = admin_client_.get(f"/admin/mcp_gateway/enginesecret/{secret.pk}/history/")

    text = page.content.decode()
    assert "Set on" in text
    assert "root" in text
    assert 'name="replace"' in text
    for shown in (page, listing, history):
        assert KEY not in shown.content.decode()
        assert secret.ciphertext not in shown.content.decode()
    assert secret.set_by_name == "root"


def test_replacing_in_the_admin_stores_a_new_value(admin_client_, with_secrets):
    secret = EngineSecret.objects.get(name="API_KEY")

    response = admin_client_.post(
        f"/admin/mcp_gateway/enginesecret/{secret.pk}/change/",
        {"replace": "replacement-value"},
    )

    assert response.status_code == 302
    assert store.for_engine(with_secrets.pk, "test.downstream")["API_KEY"] == (
        "replacement-value"
    )


def test_saving_without_a_replacement_keeps_the_secret(admin_client_, with_secrets):
    secret = EngineSecret.objects.get(name="API_KEY")

    admin_client_.post(f"/admin/mcp_gateway/enginesecret/{secret.pk}/change/", {})

    assert EngineSecret.objects.get(pk=secret.pk).ciphertext == secret.ciphertext


def test_the_tenant_page_warns_of_an_exposed_engine_lacking_a_secret(
    admin_client_, acme
):
    service.set_secret(acme, "test.downstream", "API_KEY", KEY)

    page = admin_client_.get(f"/admin/mcp_gateway/tenant/{acme.pk}/change/")

    text = page.content.decode()
    assert "The engine test.downstream needs the secret(s) REGION" in text
    assert KEY not in text


def test_the_system_check_warns_of_a_missing_secret(acme):
    from django.core.checks import run_checks

    warnings = [
        w for w in run_checks(databases=["default"]) if w.id == "mcp_gateway.W040"
    ]

    assert len(warnings) == 1
    assert "API_KEY, REGION" in warnings[0].msg


# -- The API -----------------------------------------------------------------------


@pytest.fixture
def api(staff: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(staff)
    return client


def test_the_api_stores_lists_and_deletes_without_returning_a_value(
    api, acme, client, token
):
    url = "/api/tenants/acme/secrets/"
    body = {"engine_id": "test.downstream", "name": "API_KEY", "value": KEY}

    created = api.post(url, body, format="json")
    replaced = api.post(url, {**body, "value": "v2"}, format="json")
    listed = api.get(url)
    deleted = api.delete(f"{url}test.downstream/API_KEY/")

    assert (created.status_code, replaced.status_code) == (201, 200)
    assert created.json() == {
        "engine_id": "test.downstream",
        "name": "API_KEY",
        "set_at": created.json()["set_at"],
        "set_by": "root",
    }
    assert [row["name"] for row in listed.json()["results"]] == ["API_KEY"]
    for response in (created, replaced, listed):
        assert KEY not in response.content.decode()
        assert "v2" not in response.content.decode()
    assert deleted.status_code == 204
    assert not EngineSecret.objects.exists()


def test_the_api_refuses_a_bad_secret_with_a_message_but_no_value(api, acme):
    response = api.post(
        "/api/tenants/acme/secrets/",
        {"engine_id": "test.downstream", "name": "NOPE", "value": KEY},
        format="json",
    )

    assert response.status_code == 400
    assert "declares no secret named 'NOPE'" in response.content.decode()
    assert KEY not in response.content.decode()


@pytest.mark.parametrize("mode", ["ok", "echo", "raise"])
def test_the_async_endpoint_hands_over_and_scrubs_secrets_alike(
    client, token, with_secrets, settings, caplog, mode
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ASYNC_ENDPOINT": True}

    with caplog.at_level(logging.DEBUG):
        cold = call(client, token, mode)
        warm = call(client, token, mode)

    for response in (cold, warm):
        assert KEY not in response.content.decode()
        assert result_of(response) == result_of(cold)
    assert KEY not in caplog.text
    if mode == "ok":
        assert result_of(cold)["structuredContent"]["key_length"] == len(KEY)


def test_no_api_payload_holds_a_secret(api, client, token, with_secrets):
    call(client, token, "echo")
    call(client, token, "raise")

    for url in (
        "/api/tenants/",
        "/api/tenants/acme/",
        "/api/tenants/acme/secrets/",
        "/api/tenants/acme/exposures/",
        "/api/engines/",
        "/api/audit/",
        "/api/usage/",
    ):
        response = api.get(url)
        assert response.status_code == 200, url
        assert KEY not in response.content.decode(), url
        assert REGION not in response.content.decode(), url


def test_the_command_sets_from_standard_input_and_lists_no_value(
    acme, monkeypatch, capsys
):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(KEY + "\n"))
    call_command("mcp_secrets", "set", "acme", "test.downstream", "API_KEY")
    call_command("mcp_secrets", "list", "--tenant", "acme")
    with pytest.raises(CommandError, match="declares no secret named 'NOPE'"):
        call_command("mcp_secrets", "set", "acme", "test.downstream", "NOPE")

    printed = capsys.readouterr().out
    assert "acme test.downstream API_KEY: set on" in printed
    assert KEY not in printed
    assert store.for_engine(acme.pk, "test.downstream")["API_KEY"] == KEY


def test_the_command_deletes_a_secret(with_secrets, capsys):
    call_command("mcp_secrets", "delete", "acme", "test.downstream", "REGION")

    assert list(EngineSecret.objects.values_list("name", flat=True)) == ["API_KEY"]
    with pytest.raises(CommandError, match="No such secret"):
        call_command("mcp_secrets", "delete", "acme", "test.downstream", "REGION")


def test_the_startup_check_refuses_under_a_running_loop_too(
    transactional_db, with_secrets, settings
):
    import asyncio

    from tests.conftest import SECRET_KEY_B

    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "SECRET_KEYS": [SECRET_KEY_B]}

    async def as_uvicorn_loads_the_app() -> None:
        store.startup_check()

    with pytest.raises(SecretKeyError, match="does not hold"):
        asyncio.run(as_uvicorn_loads_the_app())
