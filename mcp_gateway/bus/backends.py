"""Which backend carries the bus, chosen from the deployment's settings.

``MCP_GATEWAY["BUS"]`` (env ``MCP_BUS``) is ``"auto"`` by default, which
picks, in order: PostgreSQL LISTEN/NOTIFY when the default database is
PostgreSQL; else Redis pub/sub when the ``RATE_LIMIT_CACHE`` alias, or else
the ``default`` cache, is a Redis cache; else the in-process bus.
``"postgresql"``, ``"redis"``, ``"local"`` and ``"off"`` force one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from django.conf import settings
from django.core.cache.backends.redis import RedisCache
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils.module_loading import import_string

from mcp_gateway.bus.local import LocalTransport
from mcp_gateway.bus.presence import registry_directory
from mcp_gateway.bus.transport import Counters, Transport
from mcp_gateway.conf import gateway_settings

AUTO = "auto"
POSTGRESQL = "postgresql"
REDIS = "redis"
LOCAL = "local"
OFF = "off"
CHOICES = (AUTO, POSTGRESQL, REDIS, LOCAL, OFF)


class OffTransport:
    """The bus switched off: publishing does nothing, nothing is heard."""

    name = OFF

    def channel(self, topic: str) -> str:
        return topic

    def publish(self, channel: str, payload: str, *, using: str) -> None:
        pass

    def listen(self, *args: object) -> None:
        raise RuntimeError("the bus is off")  # never started when off

    def wake(self) -> None:
        pass

    def close(self) -> None:
        pass


def problem() -> str | None:
    """Why the configured backend cannot work here, or ``None``."""
    wanted = gateway_settings().BUS
    if wanted not in CHOICES:
        return f"MCP_GATEWAY['BUS'] is {wanted!r}; use one of {', '.join(CHOICES)}."
    alias = gateway_settings().BUS_DATABASE
    if wanted == POSTGRESQL and not is_postgresql(alias):
        return f"MCP_GATEWAY['BUS'] is 'postgresql' but database {alias!r} is not."
    if wanted == REDIS and redis_cache_alias() is None:
        return "MCP_GATEWAY['BUS'] is 'redis' but no Redis cache is configured."
    return None


def chosen() -> str:
    """The backend in use: never ``"auto"``.

    Raises:
        ImproperlyConfigured: the setting names a backend that cannot work.
    """
    if (reason := problem()) is not None:
        raise ImproperlyConfigured(reason)
    wanted = gateway_settings().BUS
    if wanted != AUTO:
        return wanted
    if is_postgresql(DEFAULT_DB_ALIAS):
        return POSTGRESQL
    if redis_cache_alias() is not None:
        return REDIS
    return LOCAL


class Plan(NamedTuple):
    """A backend and the arguments its transport is built from."""

    name: str
    args: tuple[Any, ...] = ()


def plan() -> Plan:
    """The chosen backend and what its transport is built from.

    Two equal plans make the same bus: a settings change that leaves the
    plan alone keeps the running bus.
    """
    name = chosen()
    if name == POSTGRESQL:
        from mcp_gateway.bus.pg import listen_params

        params = listen_params(gateway_settings().BUS_DATABASE)
        return Plan(name, (params,))
    if name == REDIS:
        return Plan(name, redis_location(redis_cache_alias() or "default"))
    if name == LOCAL:
        return Plan(name, (_sqlite_directory(),))
    return Plan(name)


def build(planned: Plan, counters: Counters) -> Transport:
    """A transport for a plan; connects nothing yet."""
    name, args = planned
    if name == POSTGRESQL:
        from mcp_gateway.bus.pg import PostgresTransport

        return PostgresTransport(dict(args[0]), counters)
    if name == REDIS:
        from mcp_gateway.bus.redis_pubsub import RedisTransport

        url, options, prefix = args
        return RedisTransport(url, options, prefix, counters)
    if name == LOCAL:
        return LocalTransport(counters, args[0])
    return OffTransport()


def is_postgresql(alias: str) -> bool:
    return alias in settings.DATABASES and connections[alias].vendor == "postgresql"


def redis_cache_alias() -> str | None:
    """The first Redis cache of ``RATE_LIMIT_CACHE`` and ``default``."""
    for alias in (gateway_settings().RATE_LIMIT_CACHE, "default"):
        config = settings.CACHES.get(alias)
        if config is not None and _is_redis(str(config.get("BACKEND", ""))):
            return alias
    return None


def _is_redis(backend: str) -> bool:
    try:
        cls = import_string(backend)
    except ImportError:
        return False
    return isinstance(cls, type) and (
        issubclass(cls, RedisCache) or cls.__module__.startswith("django_redis")
    )


def redis_location(alias: str) -> tuple[str, dict[str, Any], str]:
    """The primary server's URL, client options and key prefix of a cache."""
    config: Mapping[str, Any] = settings.CACHES[alias]
    location = config.get("LOCATION", "")
    servers = location if isinstance(location, list | tuple) else _split(location)
    options = dict(config.get("OPTIONS", {}))
    if str(config.get("BACKEND", "")).startswith("django_redis"):
        password = options.get("PASSWORD")
        options = {"password": password} if password else {}
    return servers[0], options, str(config.get("KEY_PREFIX", ""))


def _split(location: str) -> list[str]:
    return [s.strip() for s in location.replace(";", ",").split(",") if s.strip()]


def _sqlite_directory() -> Path | None:
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "sqlite":
        return None
    return registry_directory(connection.settings_dict["NAME"])
