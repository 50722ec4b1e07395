"""The backend is chosen from what the deployment already has."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection

from mcp_gateway.bus import backends
from mcp_gateway.bus.checks import check_bus
from mcp_gateway.bus.transport import Counters
from tests.mcp_gateway.bus.peer import ROOT

REDIS = {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": "redis://127.0.0.1:6379/5",
    "KEY_PREFIX": "site",
}
LOCMEM = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
ON_POSTGRESQL = connection.vendor == "postgresql"


def configure(settings, caches=None, **gateway) -> None:
    if caches is not None:
        settings.CACHES = caches
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, **gateway}


def test_auto_is_the_default():
    assert backends.chosen() in ("postgresql", "local")  # test settings: no Redis


def test_auto_picks_postgresql_whenever_the_database_is(settings):
    configure(settings, caches={"default": REDIS})

    assert backends.chosen() == ("postgresql" if ON_POSTGRESQL else "redis")


@pytest.mark.skipif(ON_POSTGRESQL, reason="the database is PostgreSQL: auto picks it")
def test_auto_picks_the_rate_limit_cache_first_then_default(settings):
    configure(settings, {"default": LOCMEM, "shared": REDIS}, RATE_LIMIT_CACHE="shared")

    assert backends.chosen() == "redis"
    assert backends.plan().args[0] == "redis://127.0.0.1:6379/5"

    configure(settings, {"default": LOCMEM})
    assert backends.chosen() == "local"


def test_redis_channels_carry_the_database_number_and_key_prefix(settings):
    configure(settings, {"default": REDIS}, BUS="redis")

    transport = backends.build(backends.plan(), Counters())

    assert transport.channel("catalog") == "mcpgw:5:site:catalog"


def test_redis_reads_a_list_of_servers_and_uses_the_first(settings):
    many = {**REDIS, "LOCATION": "redis://a:6379/2;redis://b:6379/2"}
    configure(settings, {"default": many}, BUS="redis")

    assert backends.plan().args[0] == "redis://a:6379/2"


@pytest.mark.parametrize("forced", ["local", "off"])
def test_a_forced_backend_is_used_whatever_the_deployment(settings, forced):
    configure(settings, {"default": REDIS}, BUS=forced)

    assert backends.chosen() == forced


@pytest.mark.parametrize(
    ("gateway", "message"),
    [
        ({"BUS": "kafka"}, "'kafka'; use one of auto, postgresql, redis, local, off"),
        ({"BUS": "redis"}, "'redis' but no Redis cache is configured"),
        ({"BUS": "postgresql", "BUS_DATABASE": "nope"}, "database 'nope' is not"),
    ],
)
def test_a_backend_that_cannot_work_is_a_check_error(settings, gateway, message):
    configure(settings, {"default": LOCMEM}, **gateway)

    errors = check_bus(None)

    assert [e.id for e in errors] == ["mcp_gateway.E030"]
    assert message in errors[0].msg
    with pytest.raises(ImproperlyConfigured, match="MCP_GATEWAY"):
        backends.chosen()
    with pytest.raises(SystemCheckError, match="E030"):
        call_command("check")


@pytest.mark.skipif(ON_POSTGRESQL, reason="the database is PostgreSQL")
def test_postgresql_is_refused_on_another_database(settings):
    configure(settings, BUS="postgresql")

    assert "'postgresql' but database 'default' is not" in check_bus(None)[0].msg


def test_the_reference_project_reads_mcp_bus_from_the_environment():
    show = (
        "import json, django; from django.conf import settings; django.setup();"
        " g = settings.MCP_GATEWAY; print(json.dumps([g['BUS'], g['BUS_DATABASE']]))"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "MCP_BUS": "redis",
        "MCP_BUS_DATABASE": "direct",
    }

    done = subprocess.run(
        [sys.executable, "-c", show],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )

    assert json.loads(done.stdout.splitlines()[-1]) == ["redis", "direct"]
