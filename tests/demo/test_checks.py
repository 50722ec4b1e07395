"""The reference project's own check: its insecure development key."""

from __future__ import annotations

from django.core import checks

from demo.checks import check_secret_key


def ids(messages: list[checks.CheckMessage]) -> list[str | None]:
    return [message.id for message in messages]


def test_the_insecure_default_secret_key_without_debug_is_e004(settings):
    settings.SECRET_KEY = "django-insecure-reference-project-development-only-key"
    settings.DEBUG = False

    assert ids(check_secret_key(None)) == ["mcp_gateway.E004"]


def test_the_insecure_default_secret_key_with_debug_is_allowed(settings):
    settings.SECRET_KEY = "django-insecure-reference-project-development-only-key"
    settings.DEBUG = True

    assert check_secret_key(None) == []


def test_a_real_secret_key_passes(settings):
    settings.DEBUG = False

    assert check_secret_key(None) == []


def test_no_check_of_the_app_reports_the_reference_projects_key(settings):
    settings.SECRET_KEY = "django-insecure-reference-project-development-only-key"
    settings.DEBUG = False
    registered = checks.registry.registry.get_checks(include_deployment_checks=True)

    gateway = [c for c in registered if c.__module__.startswith("mcp_gateway")]
    found = [m.id for check in gateway for m in check(app_configs=None, databases=None)]

    assert "mcp_gateway.E004" not in found
    assert "mcp_gateway.E004" in ids(check_secret_key(None))
