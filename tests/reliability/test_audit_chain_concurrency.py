"""Concurrent calls of one tenant, sealed while they land: one valid chain.

PostgreSQL and a threaded live server: 32 calls at once, two sealers
running meanwhile, in either ``AUDIT_DURABILITY``; every call lands, each
in the chain exactly once, and ``verify`` finds the chain whole.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.contrib.auth.models import User
from django.db import connection, connections

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.audit_chain import seal, verify
from mcp_gateway.models import Tenant

CALLS = 32

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="runs on PostgreSQL (DATABASE_URL=postgres://…)",
    ),
]


@pytest.mark.parametrize("durability", ["durable", "async"])
def test_32_concurrent_calls_all_land_and_seal_into_one_valid_chain(
    live_server, settings, durability
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_DURABILITY": durability}
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose(tenant, "demo.echo")
    secret = tokens.issue(tenant, User.objects.create_user("alice")).secret
    headers = {
        "Authorization": f"Bearer {secret}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }

    def call(n: int) -> int:
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "demo_echo", "arguments": {"text": f"call {n}"}},
        }
        url = f"{live_server.url}/t/acme/mcp"
        response = requests.post(
            url, data=json.dumps(body), headers=headers, timeout=60
        )
        return response.status_code

    done = threading.Event()

    def sealer() -> int:
        sealed = 0
        try:
            while not done.is_set():
                sealed += seal.seal("acme", batch=4)
            return sealed + seal.seal("acme", batch=4)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=2) as sealers:
        running = [sealers.submit(sealer) for _ in range(2)]
        with ThreadPoolExecutor(max_workers=CALLS) as pool:
            statuses = list(pool.map(call, range(CALLS)))
        done.set()
        sealed_meanwhile = sum(future.result() for future in running)
    sealed_meanwhile += seal.seal()

    assert statuses == [200] * CALLS
    rows = list(ToolCall.objects.filter(tenant_slug="acme").order_by("chain_seq"))
    assert len(rows) == CALLS
    assert sealed_meanwhile == CALLS + 1  # and the exposure change
    assert [row.chain_seq for row in rows] == list(range(1, CALLS + 1))
    assert sorted(row.request_id for row in rows) == sorted(
        str(n) for n in range(CALLS)
    )
    reports = verify.verify("acme")
    assert all(report.ok for report in reports), reports
    assert {(r.kind, r.verified, r.pending) for r in reports} == {
        ("call", CALLS, 0),
        ("change", 1, 0),
    }
