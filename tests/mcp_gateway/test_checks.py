from __future__ import annotations

import pytest
from django.core import checks

from mcp_gateway import bookkeeping
from mcp_gateway.checks import (
    check_api_requirements,
    check_auth_mode,
    check_settings,
    check_stale_exposures,
)
from mcp_gateway.conf import AUTH_DISABLED
from mcp_gateway.models import Exposure


def ids(messages: list[checks.CheckMessage]) -> list[str | None]:
    return [message.id for message in messages]


def test_the_test_settings_pass_the_settings_checks():
    assert check_settings(None) == []
    assert check_auth_mode(None) == []


def test_an_unknown_gateway_key_is_e001(settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ENGINE": ["typo"]}

    messages = check_settings(None)

    assert ids(messages) == ["mcp_gateway.E001"]
    assert "'ENGINE'" in messages[0].msg


def test_known_gateway_keys_pass(settings):
    settings.MCP_GATEWAY = {"AUTH_MODE": "required", "MAX_REQUEST_BYTES": 10}

    assert check_settings(None) == []


@pytest.mark.parametrize("cap", [0, -1, "8", 2.5])
def test_a_concurrency_cap_that_is_no_positive_number_is_e005(settings, cap):
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "MAX_CONCURRENT_CALLS_PER_TENANT": cap,
    }

    assert ids(check_settings(None)) == ["mcp_gateway.E005"]


def test_an_unknown_auth_mode_is_e002(settings):
    settings.MCP_GATEWAY = {"AUTH_MODE": "sometimes"}

    assert ids(check_settings(None)) == ["mcp_gateway.E002"]


def test_an_unknown_call_approval_is_e008(settings):
    settings.MCP_GATEWAY = {"CALL_APPROVAL": "anyone"}

    assert ids(check_settings(None)) == ["mcp_gateway.E008"]


@pytest.mark.parametrize("mode", ["client", "staff"])
def test_both_call_approvals_pass(settings, mode):
    settings.MCP_GATEWAY = {"CALL_APPROVAL": mode}

    assert ids(check_settings(None)) == []


@pytest.mark.parametrize(
    ("debug", "hosts"),
    [
        (False, ["localhost"]),
        (True, ["localhost", "example.com"]),
        (True, ["*"]),
        (True, []),
    ],
)
def test_disabled_auth_outside_loopback_development_is_e003(settings, debug, hosts):
    settings.MCP_GATEWAY = {"AUTH_MODE": AUTH_DISABLED}
    settings.DEBUG = debug
    settings.ALLOWED_HOSTS = hosts

    assert ids(check_auth_mode(None)) == ["mcp_gateway.E003"]


def test_disabled_auth_with_debug_on_loopback_hosts_is_silent(settings):
    settings.MCP_GATEWAY = {"AUTH_MODE": AUTH_DISABLED}
    settings.DEBUG = True
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

    assert check_auth_mode(None) == []


def test_required_auth_is_silent_anywhere(settings):
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["example.com"]

    assert check_auth_mode(None) == []


def test_a_stale_exposure_is_w001(tenant):
    Exposure.objects.create(
        tenant=tenant,
        engine_id="gone.engine",
        tool_name="gone_engine",
        fingerprint="0" * 64,
        engine_version="1",
    )

    messages = check_stale_exposures(None, databases=["default"])

    assert ids(messages) == ["mcp_gateway.W001"]
    assert messages[0].level == checks.WARNING
    assert messages[0].obj == "acme:gone.engine"


def test_a_live_exposure_passes_the_stale_check(tenant):
    Exposure.objects.create(
        tenant=tenant,
        engine_id="demo.echo",
        tool_name="demo_echo",
        fingerprint="0" * 64,
        engine_version="1",
    )

    assert check_stale_exposures(None, databases=["default"]) == []


def test_the_stale_check_is_silent_without_databases():
    assert check_stale_exposures(None) == []
    assert check_stale_exposures(None, databases=None) == []


def test_the_stale_check_is_a_database_check():
    registered = checks.registry.registry.get_checks(include_deployment_checks=True)

    stale: object = check_stale_exposures
    tags = [getattr(c, "tags", ()) for c in registered if c is stale]
    assert [list(t) for t in tags] == [[checks.Tags.database]]


@pytest.mark.django_db
def test_disabled_auth_serves_a_loopback_development_setup(client, settings, tenant):
    settings.DEBUG = True
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUTH_MODE": AUTH_DISABLED}
    bookkeeping.expose(tenant, "demo.echo")

    response = client.post(
        "/t/acme/mcp",
        '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        content_type="application/json",
        headers={"Host": "127.0.0.1"},
    )

    assert response.status_code == 200
    assert [t["name"] for t in response.json()["result"]["tools"]] == ["demo_echo"]


@pytest.mark.django_db
def test_disabled_auth_anywhere_else_refuses_every_request(client, settings, tenant):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUTH_MODE": AUTH_DISABLED}
    bookkeeping.expose(tenant, "demo.echo")

    response = client.post(
        "/t/acme/mcp",
        '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        content_type="application/json",
    )

    assert response.status_code == 503
    assert response.json()["error"]["code"] == -32000


# The management API's requirements


def test_the_reference_urlconf_with_drf_installed_passes():
    assert check_api_requirements(None) == []


def test_including_the_api_without_drfs_apps_is_e020(settings):
    settings.INSTALLED_APPS = [
        app
        for app in settings.INSTALLED_APPS
        if app not in ("rest_framework.authtoken", "drf_spectacular")
    ]

    messages = check_api_requirements(None)

    assert ids(messages) == ["mcp_gateway.E020"]
    assert "'rest_framework.authtoken'" in messages[0].msg
    assert "'rest_framework'," not in messages[0].msg


def test_a_urlconf_without_the_api_needs_nothing(settings):
    settings.ROOT_URLCONF = "mcp_gateway.urls"
    settings.INSTALLED_APPS = [
        app for app in settings.INSTALLED_APPS if not app.startswith("rest_framework")
    ]

    assert check_api_requirements(None) == []
