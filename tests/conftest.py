"""Shared fixtures: tenants, users, a token and a fresh engine registry."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from engines_app.registry import EngineRegistry
from mcp_gateway import tokens
from mcp_gateway.models import Membership, Tenant

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
