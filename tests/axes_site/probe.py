"""What django-axes does to the MCP endpoint and the admin, as JSON.

Run as ``python -m tests.axes_site.probe`` with
``DJANGO_SETTINGS_MODULE=tests.axes_site.settings``; prints one JSON object
of observed status codes for ``SIGNAL_BEARER_FAILURES`` on and off.
"""

from __future__ import annotations

import json
from typing import Any

import django

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client, override_settings  # noqa: E402

from mcp_gateway import bookkeeping, tokens  # noqa: E402
from mcp_gateway.models import Membership, Tenant  # noqa: E402

BODY = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def mcp(client: Client, token: str) -> int:
    response = client.post(
        "/t/acme/mcp",
        json.dumps(BODY),
        content_type="application/json",
        headers={
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": "2025-11-25",
        },
    )
    return response.status_code


def admin_login(client: Client, password: str = "root-password") -> int:
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "root", "password": password}
    )
    return response.status_code


def scenario(address: str, good: str) -> dict[str, Any]:
    client = Client(REMOTE_ADDR=address)
    bad = [mcp(client, "mcpgw_nope_nope") for _ in range(3)]
    return {
        "bad_tokens": bad,
        "good_token_after": mcp(client, good),
        "admin_login_after": admin_login(client),
    }


def main() -> None:
    call_command("migrate", verbosity=0)
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    bookkeeping.expose_many(tenant, ["demo.echo"])
    alice = User.objects.create_user("alice")
    Membership.objects.create(tenant=tenant, user=alice)
    User.objects.create_superuser("root", password="root-password")
    good = tokens.issue(tenant, alice).secret
    result = {"signal_on": scenario("10.0.0.1", good)}
    with override_settings(MCP_GATEWAY={"SIGNAL_BEARER_FAILURES": False}):
        result["signal_off"] = scenario("10.0.0.2", good)
        locked = Client(REMOTE_ADDR="10.0.0.3")
        result["signal_off_locked_by_admin"] = {
            "bad_admin_logins": [admin_login(locked, "wrong") for _ in range(3)],
            "good_token_after": mcp(locked, good),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
