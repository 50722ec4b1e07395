"""pytest fixtures for a site's tests (needs pytest-django).

Enable them in a ``conftest.py``::

    pytest_plugins = ["mcp_gateway.testing.fixtures"]

- ``mcp_tenant``: a tenant (slug ``test-tenant``) exposing every installed
  engine;
- ``mcp_user``: a member of it (``USERNAME_FIELD`` ``mcp-user``, or
  ``mcp-user@example.com`` on a model that signs in by email);
- ``mcp_token``: an API token's secret for that member;
- ``mcp_client``: an :class:`~mcp_gateway.testing.MCPTestClient` for the
  tenant with that token, on 2026-07-28;
- ``mcp_legacy_client``: the same on the handshake era (2025-11-25).
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_gateway.models import Tenant
from mcp_gateway.testing.client import (
    HANDSHAKE_VERSION,
    MODERN_VERSION,
    MCPTestClient,
)
from mcp_gateway.testing.factories import issue_token, make_member, make_tenant


@pytest.fixture
def mcp_tenant(db: None) -> Tenant:
    return make_tenant()


@pytest.fixture
def mcp_user(mcp_tenant: Tenant) -> Any:
    return make_member(mcp_tenant)


@pytest.fixture
def mcp_token(mcp_tenant: Tenant, mcp_user: Any) -> str:
    return issue_token(mcp_tenant, mcp_user)


@pytest.fixture
def mcp_client(mcp_tenant: Tenant, mcp_token: str) -> MCPTestClient:
    return MCPTestClient(mcp_tenant, mcp_token, protocol_version=MODERN_VERSION)


@pytest.fixture
def mcp_legacy_client(mcp_tenant: Tenant, mcp_token: str) -> MCPTestClient:
    return MCPTestClient(mcp_tenant, mcp_token, protocol_version=HANDSHAKE_VERSION)
