"""Drift across processes: each worker holds a changed tool from its own
engine code, and an approval made through one process is served by another
at once, without a restart.

Two live servers, gunicorn and uvicorn, run the new engine code (the
drifting engine's description changed, ``MCPGW_TEST_DRIFTING``); this test
process exposed the engine under the old code, so both hold it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ExposureEvent
from mcp_gateway.catalog import clear_cache
from mcp_gateway.models import Tenant
from tests.engines import Drifting
from tests.live import rawhttp
from tests.live.servers import Server, database_url, running
from tests.rpc import post_rpc

pytestmark = pytest.mark.django_db(transaction=True)

NEW = "Count words. Now also deletes files."


@pytest.fixture
def two_servers(
    django_db_setup: None, tmp_path: Path
) -> Iterator[tuple[Server, Server]]:
    url = database_url(connection.settings_dict)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        running("gunicorn", url, tmp_path / "a", MCPGW_TEST_DRIFTING=NEW) as first,
        running("uvicorn", url, tmp_path / "b", MCPGW_TEST_DRIFTING=NEW) as second,
    ):
        yield first, second


@pytest.fixture
def old_code() -> Iterator[None]:
    """This process runs the old engine code: the description of before."""
    default_registry.register(Drifting)
    clear_cache()
    yield
    clear_cache()
    default_registry.unregister("test.drifting")


def post(server: Server, path: str, body: Any, headers: list[tuple[str, str]]) -> Any:
    data = rawhttp.request(
        "POST",
        path,
        host=f"127.0.0.1:{server.port}",
        body=json.dumps(body).encode(),
        headers=[("Content-Type", "application/json"), *headers],
    )
    return rawhttp.send(server.host, server.port, data, timeout=30)


def listed(server: Server, secret: str) -> dict[str, str]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = post(
        server,
        "/t/acme/mcp",
        body,
        [("Authorization", f"Bearer {secret}"), ("MCP-Protocol-Version", "2025-11-25")],
    )
    assert response.status == 200, response.body[:300]
    return {t["name"]: t["description"] for t in response.json()["result"]["tools"]}


def test_an_approval_through_one_process_is_served_by_the_other_at_once(
    old_code, two_servers
):
    first, second = two_servers
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["test.drifting", "demo.echo"])
    secret = tokens.issue(tenant, User.objects.create_user("alice")).secret
    staff = User.objects.create_superuser("root")
    key = Token.objects.create(user=staff).key

    before = [listed(server, secret) for server in (first, second)]
    old_worker = post_rpc(Client(), secret, "tools/list", {}).json()["result"]
    approved = post(
        first,
        "/api/tenants/acme/exposures/test.drifting/approve/",
        {},
        [("Authorization", f"Token {key}")],
    )
    after = listed(second, secret)

    assert all("test_drifting" not in tools for tools in before)
    assert all("demo_echo" in tools for tools in before)
    # A rolling deploy: a worker still on the old code keeps serving it.
    old = {t["name"]: t["description"] for t in old_worker["tools"]}
    assert old["test_drifting"] == "Count words."
    assert approved.status == 200, approved.body[:300]
    assert approved.json()["status"] == "live"
    assert after["test_drifting"] == NEW
    assert listed(first, secret)["test_drifting"] == NEW
    drifts = ExposureEvent.objects.filter(action="drift")
    assert drifts.count() == 2  # once by each process
    event = ExposureEvent.objects.get(action="approve")
    assert (event.via, event.actor) == ("api", staff)
