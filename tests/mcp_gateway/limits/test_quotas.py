"""Call quotas per UTC day and month, per tenant and per token."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import caches
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from engines_app.context import Principal
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.catalog import clear_cache
from mcp_gateway.limits import quotas
from mcp_gateway.models import ApiToken, Tenant
from tests.rpc import post_rpc


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    caches["default"].clear()


def echo(client: Client, token: str, text: str = "x") -> Any:
    params = {"name": "demo_echo", "arguments": {"text": text}}
    return post_rpc(client, token, "tools/call", params)


def quota(tenant: Tenant, **limits: int | None) -> None:
    """Set limits as the admin and the API do: a save, which publishes."""
    stored = Tenant.objects.get(pk=tenant.pk)
    for name, value in limits.items():
        setattr(stored, name, value)
    stored.save(update_fields=list(limits))


def outcomes() -> list[str]:
    return list(ToolCall.objects.order_by("pk").values_list("outcome", flat=True))


def test_a_day_quota_admits_its_calls_then_answers_429_until_midnight(
    client, tenant, token
):
    bookkeeping.expose(tenant, "demo.echo")
    quota(tenant, calls_per_day=2)

    answers = [echo(client, token) for _ in range(3)]
    listing = post_rpc(client, token, "tools/list", None)

    assert [a.status_code for a in answers] == [200, 200, 429]
    refused = answers[2]
    error = refused.json()["error"]
    assert error["code"] == -32000
    assert error["data"]["code"] == "QUOTA"
    assert error["data"]["period"] == "day"
    now = datetime.now(UTC)
    midnight = quotas.reset(quotas.DAY, now)
    wait = int(refused["Retry-After"])
    assert abs(wait - (midnight - now).total_seconds()) <= 2
    assert error["data"]["retryAfter"] == wait
    assert listing.status_code == 200  # listing keeps working
    assert outcomes() == ["ok", "ok", "quota"]


def test_a_month_quota_waits_for_the_first_of_next_month(tenant):
    quota(tenant, calls_per_month=1)
    tenant.refresh_from_db()
    alice = Principal(tenant="acme", user="alice", token="abc")
    now = datetime(2026, 12, 31, 23, 0, tzinfo=UTC)

    first = quotas.check(tenant, alice, now)
    second = quotas.check(tenant, alice, now)
    january = quotas.check(tenant, alice, datetime(2027, 1, 1, 0, 0, 1, tzinfo=UTC))

    assert (first.allowed, second.allowed, january.allowed) == (True, False, True)
    assert second.period == "month"
    assert second.retry_after == 3600


def test_reset_is_the_next_utc_midnight_and_first_of_month():
    moment = datetime(2026, 2, 28, 12, 30, tzinfo=UTC)

    assert quotas.reset(quotas.DAY, moment) == datetime(2026, 3, 1, tzinfo=UTC)
    assert quotas.reset(quotas.MONTH, moment) == datetime(2026, 3, 1, tzinfo=UTC)
    assert quotas.reset(quotas.MONTH, datetime(2026, 1, 31, tzinfo=UTC)) == (
        datetime(2026, 2, 1, tzinfo=UTC)
    )


def test_a_token_quota_counts_each_token_apart(client, tenant, member, token):
    bookkeeping.expose(tenant, "demo.echo")
    quota(tenant, token_calls_per_day=1)
    other = tokens.issue(tenant, member).secret

    mine = [echo(client, token).status_code for _ in range(2)]
    theirs = [echo(client, other).status_code for _ in range(2)]

    assert mine == [200, 429]
    assert theirs == [200, 429]


def test_calls_that_run_no_engine_do_not_count(client, tenant, member, token, settings):
    bookkeeping.expose_many(tenant, ["demo.echo", "demo.fail"])
    quota(tenant, calls_per_day=1)
    reader = tokens.issue(tenant, member, scopes=["mcp:tools:read"]).secret
    post_rpc(client, token, "tools/call", {"name": "nope", "arguments": {}})
    post_rpc(client, reader, "tools/call", {"name": "demo_fail", "arguments": {}})
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "MAX_CONCURRENT_CALLS_PER_TENANT": 1,
    }
    caches["default"].set("mcpgw:cc:acme:0", "another call", 30)
    echo(client, token)  # busy
    caches["default"].delete("mcpgw:cc:acme:0")
    quota(tenant, calls_per_day=1, calls_per_minute=1)
    echo(client, token)  # the one the quota counts
    echo(client, token)  # rate-limited: never reaches the quota

    tenant.refresh_from_db()
    assert outcomes() == ["invalid", "denied", "busy", "ok", "rate_limited"]
    assert quotas.usage(tenant)[0].used == 1


def test_a_call_that_ran_counts_even_when_it_failed(client, tenant, token):
    bookkeeping.expose(tenant, "demo.fail")
    quota(tenant, calls_per_day=1)

    failed = post_rpc(client, token, "tools/call", {"name": "demo_fail"})
    refused = post_rpc(client, token, "tools/call", {"name": "demo_fail"})

    assert failed.json()["result"]["isError"] is True
    assert refused.status_code == 429
    assert outcomes() == ["failed", "quota"]


def test_a_dead_cache_follows_rate_limit_fail_open(settings, tenant):
    settings.CACHES = {
        **settings.CACHES,
        "dead": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        },
    }
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "RATE_LIMIT_CACHE": "dead"}
    quota(tenant, calls_per_day=1)
    tenant.refresh_from_db()
    alice = Principal(tenant="acme", user="alice")

    opened = quotas.check(tenant, alice)
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "RATE_LIMIT_FAIL_OPEN": False}
    closed = quotas.check(tenant, alice)

    assert (opened.allowed, closed.allowed, closed.unavailable) == (True, False, True)


def test_a_quota_costs_no_query(
    principal_cache, client, tenant, issued_token, django_assert_num_queries
):
    ApiToken.objects.filter(pk=issued_token.token.pk).update(
        last_used_at=timezone.now()
    )
    bookkeeping.expose(tenant, "demo.echo")
    quota(tenant, calls_per_day=100, token_calls_per_month=100)
    clear_cache()
    echo(client, issued_token.secret)  # warms the catalog and the principal

    with django_assert_num_queries(1):  # the audit insert
        assert echo(client, issued_token.secret).status_code == 200


def test_quotas_are_set_through_the_api(db, tenant):
    api = APIClient()
    api.force_authenticate(User.objects.create_superuser("root"))

    changed = api.patch(
        "/api/tenants/acme/",
        {"calls_per_day": 100, "calls_per_month": 2000, "token_calls_per_day": 10},
        format="json",
    )
    refused = api.patch("/api/tenants/acme/", {"calls_per_day": 0}, format="json")

    assert changed.status_code == 200
    assert changed.json()["calls_per_month"] == 2000
    assert refused.status_code == 400
    tenant.refresh_from_db()
    assert (tenant.calls_per_day, tenant.token_calls_per_month) == (100, None)


def test_the_admin_sets_quotas_and_shows_this_months_usage(client, tenant, token):
    bookkeeping.expose(tenant, "demo.echo")
    quota(tenant, calls_per_month=40)
    for _ in range(3):
        echo(client, token)
    admin = Client()
    admin.force_login(User.objects.create_superuser("root"))

    page = admin.get(f"/admin/mcp_gateway/tenant/{tenant.pk}/change/")

    text = page.content.decode()
    assert page.status_code == 200
    assert 'name="calls_per_month"' in text
    assert 'name="token_calls_per_day"' in text
    assert "This month (UTC): 3 of 40 calls (8%)." in text
    assert "Audit log, this month: 3 calls that ran an engine." in text


def test_with_the_audit_log_off_a_call_that_ran_nothing_still_gives_back(
    client, tenant, token, settings
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_CALLS": False}
    bookkeeping.expose(tenant, "demo.echo")
    quota(tenant, calls_per_day=1)

    unknown = post_rpc(client, token, "tools/call", {"name": "nope"})
    ran = echo(client, token)
    over = echo(client, token)

    assert "error" in unknown.json()
    assert (ran.status_code, over.status_code) == (200, 429)
    assert not ToolCall.objects.exists()


def test_a_tokens_own_quota_replaces_the_tenants_quota_per_token(
    client, tenant, member, token
):
    bookkeeping.expose(tenant, "demo.echo")
    quota(tenant, token_calls_per_day=3)
    small = tokens.issue(tenant, member, calls_per_day=1).secret
    large = tokens.issue(tenant, member, calls_per_day=5).secret

    default = [echo(client, token).status_code for _ in range(4)]
    own_small = [echo(client, small).status_code for _ in range(2)]
    own_large = [echo(client, large).status_code for _ in range(5)]

    assert default == [200, 200, 200, 429]
    assert own_small == [200, 429]
    assert own_large == [200] * 5  # five, above the tenant's three per token


def test_a_tokens_own_quota_binds_when_the_tenant_has_none(
    client, tenant, member, token, settings
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_CALLS": False}
    bookkeeping.expose(tenant, "demo.echo")
    limited = tokens.issue(tenant, member, calls_per_month=2).secret

    post_rpc(client, limited, "tools/call", {"name": "nope"})  # ran nothing
    mine = [echo(client, limited) for _ in range(3)]
    others = [echo(client, token).status_code for _ in range(3)]

    assert [answer.status_code for answer in mine] == [200, 200, 429]
    assert mine[2].json()["error"]["data"]["period"] == "month"
    assert others == [200, 200, 200]  # an unlimited token of the same tenant


def test_a_tokens_quota_is_set_through_the_api_and_checked(db, tenant):
    api = APIClient()
    api.force_authenticate(User.objects.create_superuser("root"))
    url = "/api/tenants/acme/tokens/"

    made = api.post(url, {"calls_per_day": 10, "calls_per_month": 100}, format="json")
    refused = api.post(url, {"calls_per_day": 0}, format="json")
    listed = api.get(url).json()

    assert made.status_code == 201
    assert (made.json()["calls_per_day"], made.json()["calls_per_month"]) == (10, 100)
    assert refused.status_code == 400
    assert "calls_per_day" in refused.json()["errors"]
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [(row["calls_per_day"], row["calls_per_month"]) for row in rows] == [
        (10, 100)
    ]
    assert ApiToken.objects.count() == 1


def test_the_admin_issues_a_token_with_its_own_quota(db, tenant, member):
    admin = Client()
    admin.force_login(User.objects.create_superuser("root"))

    page = admin.post(
        "/admin/mcp_gateway/apitoken/add/",
        {
            "tenant": tenant.pk,
            "user": member.pk,
            "name": "ci",
            "scopes": ["mcp:tools"],
            "calls_per_day": "7",
            "calls_per_month": "",
        },
    )

    assert page.status_code == 200, page.content[:500]
    token = ApiToken.objects.get()
    assert (token.calls_per_day, token.calls_per_month) == (7, None)


def test_the_token_command_sets_a_tokens_quota(db, tenant, member):
    out = io.StringIO()

    call_command(
        "mcp_token",
        "create",
        "acme",
        "--user",
        member.get_username(),
        "--calls-per-day",
        "3",
        "--calls-per-month",
        "30",
        stdout=out,
    )
    with pytest.raises(CommandError, match="positive"):
        call_command(
            "mcp_token",
            "create",
            "acme",
            "--user",
            member.get_username(),
            "--calls-per-day",
            "0",
        )

    token = ApiToken.objects.get()
    assert (token.calls_per_day, token.calls_per_month) == (3, 30)
    parts = tokens.split(out.getvalue().strip())
    assert parts is not None
    assert parts[0] == token.prefix
