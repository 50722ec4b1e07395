"""Shared fixtures: tenants, users, a token and a fresh engine registry."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth.models import User
from django.core.cache import cache

from engines_app.registry import EngineRegistry, default_registry
from mcp_gateway import bus, principals, tokens
from mcp_gateway.conf import GatewaySettings
from mcp_gateway.engine_secrets import store
from mcp_gateway.models import Membership, Tenant
from tests.engines import Downstream

# The host-site suite runs from a wheel in its own environments (noxfile.py,
# scripts/hostsite), never inside this test run.
collect_ignore = ["hostsite"]


@pytest.fixture(autouse=True, scope="session")
def _started_logging_done() -> None:
    """The one start-up scan for held exposures (one query, at a process's
    first catalog) counts as done, so that exact query counts do not depend
    on which test builds the first catalog; tests/mcp_gateway/test_drift.py
    runs it on purpose."""
    from mcp_gateway import catalog

    catalog._started.set()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """pytest-django's, with this process's change bus stopped before the
    test database is dropped: on PostgreSQL the bus LISTENs on a connection
    of its own, which would keep the database in use."""
    yield
    from mcp_gateway import bus

    bus.close()


@pytest.fixture(autouse=True)
def _forget_engine_secrets() -> Iterator[None]:
    """Each test starts with no secrets kept in the process."""
    store.clear()
    principals.clear()
    yield
    store.clear()
    principals.clear()


@pytest.fixture
def tenant(db: None) -> Tenant:
    return Tenant.objects.create(slug="acme", name="Acme")


@pytest.fixture
def other_tenant(db: None) -> Tenant:
    return Tenant.objects.create(slug="globex", name="Globex")


@pytest.fixture
def member(tenant: Tenant) -> User:
    user = User.objects.create_user("alice", password="alice-password")
    Membership.objects.create(tenant=tenant, user=user)
    return user


@pytest.fixture
def staff(db: None) -> User:
    return User.objects.create_superuser("root", password="root-password")


@pytest.fixture
def issued_token(tenant: Tenant, member: User) -> tokens.IssuedToken:
    return tokens.issue(tenant, member)


@pytest.fixture
def token(issued_token: tokens.IssuedToken) -> str:
    return issued_token.secret


@pytest.fixture
def registry() -> EngineRegistry:
    return EngineRegistry()


SECRET_KEY_A = Fernet.generate_key().decode()
SECRET_KEY_B = Fernet.generate_key().decode()


@pytest.fixture
def secret_keys(settings: Any) -> list[str]:
    """One Fernet key in ``SECRET_KEYS`` (``SECRET_KEY_A``)."""
    keys = [SECRET_KEY_A]
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "SECRET_KEYS": keys}
    return keys


@pytest.fixture
def downstream() -> Iterator[Any]:
    """``test.downstream`` installed: an engine declaring API_KEY and REGION."""
    engine = Downstream()
    default_registry.register(engine)
    yield engine
    default_registry.unregister(engine.id)


@pytest.fixture(autouse=True)
def _no_principal_cache(settings: Any) -> None:
    """No principal kept unless a test asks (``principal_cache``).

    The cache keeps a row only once its bus listens, which happens a moment
    after the first request: left on, a test counting queries would depend
    on that moment (on PostgreSQL, whose bus crosses processes; the
    in-process bus of SQLite keeps nothing anyway).
    """
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "PRINCIPAL_CACHE_SECONDS": 0}


@pytest.fixture
def principal_cache(settings: Any) -> None:
    """The principal cache on, over a bus that crosses processes, listening.

    PostgreSQL's own NOTIFY, or Redis on SQLite (under a key prefix of this
    test's own); returns once the cache heard the bus's first ``Resync``.
    """
    from django.db import connection

    from tests.mcp_gateway.bus.helpers import REDIS_URL, eventually, need_redis

    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "PRINCIPAL_CACHE_SECONDS": GatewaySettings.PRINCIPAL_CACHE_SECONDS,
    }
    if connection.vendor != "postgresql":
        need_redis()
        settings.CACHES = {
            **settings.CACHES,
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": REDIS_URL,
                "KEY_PREFIX": f"principals-{secrets.token_hex(4)}",
            },
        }
        settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "redis"}
    assert bus.cross_process()
    principals.listen()
    eventually(principals.listening, "the principal cache listens")


@pytest.fixture
def local_bus(settings: Any) -> Iterator[None]:
    """The in-process bus, started afresh, and an empty cache: an answer or a
    cancel crosses requests as Redis or PostgreSQL would carry it across
    processes."""
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}
    bus.close()
    cache.clear()
    yield
    bus.close()
