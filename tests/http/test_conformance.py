"""The official MCP conformance suite against the gateway, twice.

Under gunicorn (WSGI: JSON answers) and under uvicorn (ASGI: progress and
log lines stream over SSE), each with its own expected-failures file.

Its runner sends no Authorization header, so the server runs in the
development mode without authentication, on loopback only.
"""

from __future__ import annotations

import pytest

from mcp_gateway import bookkeeping
from mcp_gateway.models import Tenant
from tests.live.node import CLIENTS, CONFORMANCE_PACK, run_node
from tests.live.servers import Server

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_ENV = {
    "MCP_AUTH_MODE": "dangerously-disabled-for-development",
    "DEBUG": "1",
    "MCPGW_TEST_LOOPBACK_ONLY": "1",  # the one setup where that mode serves
}


@pytest.fixture
def conformance_tenant(server: Server) -> Tenant:
    tenant = Tenant.objects.create(slug="conformance", name="Conformance")
    bookkeeping.expose_many(tenant, CONFORMANCE_PACK)
    return tenant


EXPECTED_FAILURES = {
    "gunicorn": "conformance-expected-failures.yml",
    "uvicorn": "conformance-expected-failures-asgi.yml",
}


@pytest.mark.parametrize("server", ["gunicorn", "uvicorn"], indirect=True)
def test_the_conformance_suite_passes_with_the_expected_failures(
    server, conformance_tenant, tmp_path
):
    url = f"{server.url}/t/{conformance_tenant.slug}/mcp"

    result = run_node(
        [
            str(CLIENTS / "node_modules" / ".bin" / "conformance"),
            "server",
            "--url",
            url,
            "--suite",
            "all",
            "--expected-failures",
            str(CLIENTS / EXPECTED_FAILURES[server.kind]),
            "-o",
            str(tmp_path),
        ],
        cwd=CLIENTS,
    )

    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


NEXT_EXPECTED_FAILURES = {
    "gunicorn": "conformance-next-expected-failures.yml",
    "uvicorn": "conformance-next-expected-failures-asgi.yml",
}
NEXT_SUITE = CLIENTS / "node_modules" / "conformance-next" / "dist" / "index.js"


@pytest.mark.parametrize("server", ["gunicorn", "uvicorn"], indirect=True)
def test_the_next_conformance_suite_passes_the_2026_requirements(
    server, conformance_tenant, tmp_path
):
    url = f"{server.url}/t/{conformance_tenant.slug}/mcp"

    result = run_node(
        [
            "node",  # an npm alias installs no bin of its own
            str(NEXT_SUITE),
            "server",
            "--url",
            url,
            "--requirements",
            "2026-07-28",
            "--expected-failures",
            str(CLIENTS / NEXT_EXPECTED_FAILURES[server.kind]),
            "-o",
            str(tmp_path),
        ],
        cwd=CLIENTS,
        timeout=600,
    )

    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
