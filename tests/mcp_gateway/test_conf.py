from __future__ import annotations

import dataclasses

from mcp_gateway.conf import (
    AUTH_REQUIRED,
    GatewaySettings,
    gateway_settings,
    unknown_keys,
    user_settings,
)


def test_defaults_apply_when_nothing_is_set(settings):
    settings.MCP_GATEWAY = {}

    current = gateway_settings()

    assert current == GatewaySettings()
    assert current.AUTH_MODE == AUTH_REQUIRED
    assert current.MAX_REQUEST_BYTES == 1_048_576
    assert current.TOKEN_LAST_USED_INTERVAL_SECONDS == 60
    assert current.ENGINES == ()


def test_defaults_apply_without_the_setting(settings):
    del settings.MCP_GATEWAY
    gateway_settings.cache_clear()  # deleting a setting sends no signal
    try:
        assert gateway_settings() == GatewaySettings()
    finally:
        gateway_settings.cache_clear()


def test_the_test_settings_are_read():
    current = gateway_settings()

    assert current.PUBLIC_BASE_URL == "http://testserver"
    assert "tests.engines.COLLIDING" in current.ENGINES
    assert isinstance(current.ENGINES, tuple)


def test_overriding_the_setting_resets_the_cache(settings):
    first = gateway_settings()

    settings.MCP_GATEWAY = {"MAX_REQUEST_BYTES": 10, "ALLOWED_ORIGINS": ["https://a"]}

    current = gateway_settings()
    assert current is not first
    assert current.MAX_REQUEST_BYTES == 10
    assert current.ALLOWED_ORIGINS == ("https://a",)
    assert current.AUTH_MODE == AUTH_REQUIRED


def test_settings_are_cached_between_reads():
    assert gateway_settings() is gateway_settings()


def test_settings_are_frozen():
    assert dataclasses.is_dataclass(GatewaySettings)
    assert GatewaySettings.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_unknown_keys_are_reported_not_applied(settings):
    settings.MCP_GATEWAY = {"NOPE": 1, "AUTH_MODE": AUTH_REQUIRED}

    assert unknown_keys() == {"NOPE"}
    assert not hasattr(gateway_settings(), "NOPE")


def test_a_setting_that_is_not_a_dict_counts_as_empty(settings):
    settings.MCP_GATEWAY = ["ENGINES"]

    assert user_settings() == {}
    assert gateway_settings() == GatewaySettings()
