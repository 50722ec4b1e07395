"""Bad settings fail closed under every server, and deadlines classify alike.

- Authentication disabled outside a loopback development setup: system
  checks do not run under gunicorn or uvicorn, so the endpoint itself
  refuses every request (a JSON 503, no engine, no row).
- ``demo_slow`` past its deadline is a ``timeout``, every time: never the
  ``CANCELLED`` its own view of the deadline would give.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import Tenant
from tests.live import rawhttp
from tests.live.servers import Server, database_url, running

pytestmark = pytest.mark.django_db(transaction=True)

DISABLED = "dangerously-disabled-for-development"
SETUPS = {
    "DEBUG off": {"DEBUG": "0", "MCPGW_TEST_LOOPBACK_ONLY": "1"},
    "a public allowed host": {"DEBUG": "1"},  # "testserver" is no loopback name
}


def start(request: Any, tmp_path_factory: Any, **env: str) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp(request.param.replace(" ", "-"))
    kind = request.param.split(" ")[0]
    url = database_url(connection.settings_dict)
    with running(kind, url, tmp, port=None, **env) as live:
        yield live


@pytest.fixture(
    scope="module",
    params=[f"{kind} {setup}" for kind in ("gunicorn", "uvicorn") for setup in SETUPS],
)
def unsafe(request, django_db_setup, tmp_path_factory) -> Iterator[Server]:
    setup = SETUPS[request.param.split(" ", 1)[1]]
    yield from start(request, tmp_path_factory, MCP_AUTH_MODE=DISABLED, **setup)


@pytest.fixture(scope="module", params=["gunicorn", "uvicorn"])
def short_deadline(request, django_db_setup, tmp_path_factory) -> Iterator[Server]:
    yield from start(request, tmp_path_factory, MCP_ENGINE_DEADLINE_SECONDS="0.3")


def call(server: Server, arguments: Any, name: str, secret: str | None) -> Any:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    ).encode()
    headers = [("Content-Type", "application/json")]
    if secret is not None:
        headers.append(("Authorization", f"Bearer {secret}"))
    data = rawhttp.request(
        "POST",
        "/t/acme/mcp",
        host=f"127.0.0.1:{server.port}",
        body=body,
        headers=headers,
    )
    return rawhttp.send(server.host, server.port, data, timeout=30)


def test_disabled_authentication_outside_loopback_development_refuses_all(unsafe):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose(tenant, "test.probe")
    secret = tokens.issue(tenant, User.objects.create_user("alice")).secret

    anonymous = call(unsafe, {}, "test_probe", None)
    with_token = call(unsafe, {}, "test_probe", secret)

    for response in (anonymous, with_token):
        assert response.status == 503, response.body[:300]
        assert response.json()["error"]["code"] == -32000
        assert b"Traceback" not in response.body
        assert b"E003" not in response.body
    assert unsafe.engine_runs() == []
    assert ToolCall.objects.count() == 0


def test_demo_slow_past_its_deadline_is_always_a_timeout(short_deadline):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose(tenant, "demo.slow")
    secret = tokens.issue(tenant, User.objects.create_user("alice")).secret

    codes = []
    for _ in range(8):
        result = call(short_deadline, {"seconds": 2}, "demo_slow", secret).json()
        codes.append(json.loads(result["result"]["content"][0]["text"])["code"])

    assert codes == ["TIMEOUT"] * 8
    assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["timeout"] * 8
