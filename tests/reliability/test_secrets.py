"""Secrets never reach logs or responses, even when requests fail."""

from __future__ import annotations

import json
import logging

import pytest
from django.db import OperationalError, connection

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import Tenant


@pytest.fixture
def secret(tenant: Tenant, issued_token: tokens.IssuedToken) -> str:
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.fail"])
    return issued_token.secret


def post(client, auth: str, body: object, slug: str = "acme"):
    return client.post(
        f"/t/{slug}/mcp",
        json.dumps(body) if not isinstance(body, bytes) else body,
        content_type="application/json",
        headers={"Authorization": auth},
    )


def database_down(*args: object) -> None:
    raise OperationalError("the database is down")


def test_failing_requests_never_log_or_echo_the_token(
    client, secret, other_tenant, caplog, settings
):
    settings.DEBUG = True  # SQL logging too
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    variants = [
        post(client, f"Bearer {secret}", {**call, "params": {"name": "demo_fail"}}),
        post(client, f"Bearer {secret}", b"{not json " + secret.encode()),
        post(client, f"Bearer {secret}x", call),
        post(client, f"Bearer {secret}", call, slug="globex"),
        post(client, f"Basic {secret}", call),
        post(client, f"Bearer {secret}, Bearer {secret}", call),
    ]

    with caplog.at_level(logging.DEBUG):
        variants += [
            post(client, f"Bearer {secret}", {**call, "params": {"name": "demo_fail"}})
        ]
        with connection.execute_wrapper(
            lambda *a: (_ for _ in ()).throw(
                __import__("django.db").db.OperationalError("down")
            )
        ):
            variants.append(post(client, f"Bearer {secret}", call))

    secret_part = secret.rsplit("_", 1)[1]
    assert variants[-1].status_code == 503
    for response in variants:
        assert secret_part.encode() not in response.content
    assert secret_part not in caplog.text
    assert "Tool execution failed" in variants[0].content.decode()
