"""The reference project's settings read deploy values from the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHOW = (
    "import json, django; from django.conf import settings; django.setup(); "
    "d = settings.DATABASES['default']; g = settings.MCP_GATEWAY; "
    "print(json.dumps([d['OPTIONS'], d['CONN_MAX_AGE'], g['AUDIT_CALLS']]))"
)


def shown_by(show: str, dropped: Callable[[str], bool], **env: str) -> Any:
    """What ``show`` prints as JSON in a child process with the reference
    settings, the environment less the variables ``dropped`` names plus
    ``env``."""
    inherited = {k: v for k, v in os.environ.items() if not dropped(k)}
    environment = {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": "reference-settings-test-" + "k" * 40,
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-c", show],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def settings_with(**env: str) -> list[object]:
    shown: list[object] = shown_by(SHOW, lambda k: k == "MCP_AUDIT_CALLS", **env)
    return shown


@pytest.mark.parametrize(
    ("query", "pool"), [("pool=true", True), ("pool=False", False), ("pool=1", True)]
)
def test_a_database_url_turns_psycopgs_pool_on_or_off(query: str, pool: bool) -> None:
    url = f"postgres://postgres@127.0.0.1:5432/anything?conn_max_age=0&{query}"

    options, max_age, _ = settings_with(DATABASE_URL=url)

    assert options == {
        "pool": pool,
        "server_side_binding": True,
        "prepare_threshold": 5,
    }
    assert max_age == 0


def test_postgresql_plans_the_request_query_once_unless_told_otherwise() -> None:
    base = "postgres://postgres@127.0.0.1:5432/anything"
    off = f"{base}?server_side_binding=false&prepare_threshold=none"

    assert settings_with(DATABASE_URL=base)[0] == {
        "server_side_binding": True,
        "prepare_threshold": 5,
    }
    assert settings_with(DATABASE_URL=off)[0] == {
        "server_side_binding": False,
        "prepare_threshold": None,
    }
    assert settings_with(DATABASE_URL="sqlite:////tmp/x.sqlite3")[0] == {}


def test_the_audit_log_switch_comes_from_the_environment() -> None:
    assert settings_with(MCP_AUDIT_CALLS="false")[2] is False
    assert settings_with()[2] is True


def gateway_setting(name: str, **env: str) -> object:
    show = (
        "import json, django; from django.conf import settings; django.setup(); "
        f"print(json.dumps(settings.MCP_GATEWAY[{name!r}]))"
    )
    return shown_by(show, lambda k: k.startswith("MCP_"), **env)


@pytest.mark.parametrize(
    ("name", "variable", "value", "expected"),
    [
        (
            "OAUTH_ALLOWED_PRIVATE_HOSTS",
            "MCP_OAUTH_ALLOWED_PRIVATE_HOSTS",
            "keycloak.internal,10.0.0.0/8",
            ["keycloak.internal", "10.0.0.0/8"],
        ),
        ("OAUTH_FAILURE_CACHE_SECONDS", "MCP_OAUTH_FAILURE_CACHE_SECONDS", "7", 7.0),
        ("OAUTH_MAX_RESPONSE_BYTES", "MCP_OAUTH_MAX_RESPONSE_BYTES", "4096", 4096),
        (
            "MAX_CONCURRENT_CALLS_PER_TENANT",
            "MCP_MAX_CONCURRENT_CALLS_PER_TENANT",
            "3",
            3,
        ),
    ],
)
def test_the_security_settings_are_read_from_the_environment(
    name: str, variable: str, value: str, expected: object
) -> None:
    assert gateway_setting(name, **{variable: value}) == expected


@pytest.mark.parametrize(
    ("name", "default"),
    [
        ("OAUTH_ALLOWED_PRIVATE_HOSTS", []),
        ("OAUTH_FAILURE_CACHE_SECONDS", 30.0),
        ("OAUTH_MAX_RESPONSE_BYTES", 262_144),
        ("MAX_CONCURRENT_CALLS_PER_TENANT", None),
    ],
)
def test_the_security_settings_defaults(name: str, default: object) -> None:
    assert gateway_setting(name) == default


def test_the_audit_durability_comes_from_the_environment() -> None:
    assert gateway_setting("AUDIT_DURABILITY") == "async"
    durable = gateway_setting("AUDIT_DURABILITY", MCP_AUDIT_DURABILITY="durable")
    assert durable == "durable"


def connections_with(entry: str = "django.setup()", **env: str) -> list[object]:
    """The default database's connection handling once `entry` has loaded."""
    show = (
        f"import json, django; {entry}; from django.conf import settings; "
        "d = settings.DATABASES['default']; "
        "print(json.dumps([d['CONN_MAX_AGE'], d['CONN_HEALTH_CHECKS'], "
        "d['OPTIONS'].get('pool', False)]))"
    )
    dropped = {"MCP_SERVER_INTERFACE", "DATABASE_URL"}
    shown: list[object] = shown_by(show, dropped.__contains__, **env)
    return shown


POSTGRES = "postgres://postgres@127.0.0.1:5432/anything"


def test_under_wsgi_postgresql_connections_persist_with_health_checks() -> None:
    assert connections_with(DATABASE_URL=POSTGRES) == [600, True, False]
    assert connections_with("import config.wsgi", DATABASE_URL=POSTGRES) == [
        600,
        True,
        False,
    ]


def engine_with(entry: str = "django.setup()", **env: str) -> str:
    show = (
        f"import json, django; {entry}; from django.conf import settings; "
        "print(json.dumps(settings.DATABASES['default']['ENGINE']))"
    )
    dropped = {"MCP_SERVER_INTERFACE", "DATABASE_URL"}
    engine: str = shown_by(show, dropped.__contains__, **env)
    return engine


def test_under_wsgi_postgresql_health_checks_ask_the_socket_first() -> None:
    assert engine_with("import config.wsgi", DATABASE_URL=POSTGRES) == (
        "mcp_gateway.db.postgresql"
    )
    assert engine_with("import config.asgi", DATABASE_URL=POSTGRES) == (
        "mcp_gateway.db.postgresql"  # its pool's check asks the socket first
    )
    chosen = f"{POSTGRES}?conn_max_age=60"
    assert engine_with(DATABASE_URL=chosen) == "django.db.backends.postgresql"


def test_under_asgi_postgresql_connections_come_from_psycopgs_pool() -> None:
    assert connections_with("import config.asgi", DATABASE_URL=POSTGRES) == [
        0,
        True,
        True,
    ]
    assert connections_with(DATABASE_URL=POSTGRES, MCP_SERVER_INTERFACE="asgi") == [
        0,
        True,
        True,
    ]


@pytest.mark.parametrize(
    ("query", "interface", "expected"),
    [
        ("conn_max_age=0", "wsgi", [0, False, False]),
        ("conn_max_age=60", "asgi", [60, False, False]),
        ("conn_max_age=0&pool=false", "asgi", [0, False, False]),
        ("pool=true", "wsgi", [0, False, True]),
    ],
)
def test_a_database_url_that_chooses_its_connections_is_taken_as_it_is(
    query: str, interface: str, expected: list[object]
) -> None:
    url = f"{POSTGRES}?{query}"

    assert connections_with(DATABASE_URL=url, MCP_SERVER_INTERFACE=interface) == (
        expected
    )


def test_sqlite_keeps_djangos_connection_defaults() -> None:
    assert connections_with("import config.wsgi") == [0, False, False]
