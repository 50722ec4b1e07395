"""Prometheus series after a scripted set of calls: names, labels, values.

The series live in ``prometheus_client``'s process-wide registry, so each
test compares values before and after its own calls.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import caches
from django.test import Client
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from engines_app.context import Principal
from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit import callrecord
from mcp_gateway.audit import log as audit
from mcp_gateway.models import Tenant
from mcp_gateway.observability import metrics
from tests.rpc import post_rpc

ROOT = Path(__file__).resolve().parents[3]
SECRET = "metrics-test-token"
OUTCOMES = (
    "ok",
    "tool_error",
    "invalid",
    "failed",
    "denied",
    "timeout",
    "rate_limited",
    "cancelled",
    "busy",
    "quota",
    "awaiting",
    "confirmed",
    "declined",
    "expired",
    "unconfirmed",
)


@pytest.fixture
def metrics_on(settings: Any) -> None:
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "METRICS_TOKEN": SECRET}
    caches["default"].clear()


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def call(client: Client, token: str, tool: str, slug: str = "acme", **arguments):
    params = {"name": tool, "arguments": arguments}
    return post_rpc(client, token, "tools/call", params, slug=slug)


def snapshot(tenant: str = "acme") -> dict[str, float]:
    tools = ("demo_echo", "demo_reject", "demo_fail", "demo_slow", "")
    return {
        f"{tool}/{outcome}": value(
            "mcp_gateway_tool_calls_total", tenant=tenant, tool=tool, outcome=outcome
        )
        for tool in tools
        for outcome in OUTCOMES
    }


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


def limit(tenant: Tenant, **limits: int | None) -> None:
    """Set limits as the admin and the API do: a save, which publishes."""
    stored = Tenant.objects.get(pk=tenant.pk)
    for field, amount in limits.items():
        setattr(stored, field, amount)
    stored.save(update_fields=list(limits))


def test_every_outcome_is_counted_as_the_audit_log_records_it(
    metrics_on, settings, client, tenant, member, token
):
    for engine in ("demo.echo", "demo.reject", "demo.fail", "demo.slow"):
        bookkeeping.expose(tenant, engine)
    reader = tokens.issue(tenant, member, scopes=["mcp:tools:read"]).secret
    before = snapshot()

    assert call(client, token, "demo_echo", text="hi").status_code == 200
    rejected = call(client, token, "demo_reject").json()["result"]
    call(client, token, "demo_fail")
    call(client, token, "no_such_tool_" + "x" * 30)
    assert call(client, reader, "demo_fail").status_code == 403
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ENGINE_DEADLINE_SECONDS": 0.2}
    call(client, token, "demo_slow", seconds=5)
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "ENGINE_DEADLINE_SECONDS": 30.0,
        "MAX_CONCURRENT_CALLS_PER_TENANT": 1,
    }
    caches["default"].set("mcpgw:cc:acme:0", "another call", 30)
    call(client, token, "demo_echo", text="busy")
    caches["default"].delete("mcpgw:cc:acme:0")
    record = callrecord.CallRecord()
    record.begin(9, {"name": "demo_slow"}, "2025-11-25")
    record.finish(callrecord.CANCELLED)  # as the ASGI view records a disconnect
    audit.record_call(record, tenant, Principal(tenant="acme", user="alice"))
    limit(tenant, calls_per_minute=1)
    call(client, token, "demo_echo", text="limited")  # the window's one call
    call(client, token, "demo_echo", text="limited")
    limit(tenant, calls_per_minute=None, calls_per_day=1)
    call(client, token, "demo_echo", text="quota")  # the day's one call
    over = call(client, token, "demo_echo", text="quota")

    assert rejected["isError"] is True
    assert over.status_code == 429
    assert delta(before, snapshot()) == {
        "demo_echo/ok": 3,
        "demo_reject/tool_error": 1,  # a tool error is no success
        "demo_fail/failed": 1,
        "/invalid": 1,  # an unknown name never becomes a label
        "demo_fail/denied": 1,
        "demo_slow/timeout": 1,
        "demo_echo/busy": 1,
        "demo_slow/cancelled": 1,
        "demo_echo/rate_limited": 1,
        "demo_echo/quota": 1,
    }


def test_the_view_serves_every_series_by_name(metrics_on, client, tenant, token):
    bookkeeping.expose(tenant, "demo.echo")
    hits = value("mcp_gateway_catalog_cache_hits_total", tenant="acme")
    builds = value("mcp_gateway_catalog_builds_total", tenant="acme")
    durations = value(
        "mcp_gateway_tool_call_duration_seconds_count", tenant="acme", tool="demo_echo"
    )
    requests = value(
        "mcp_gateway_http_requests_total",
        tenant="acme",
        status="200",
        protocol_version="2025-11-25",
    )

    call(client, token, "demo_echo", text="a")
    call(client, token, "demo_echo", text="b")
    post_rpc(client, token, "tools/list", None, version="1999-01-01")
    scraped = client.get("/metrics", headers={"Authorization": f"Bearer {SECRET}"})

    assert scraped.status_code == 200
    assert scraped["Content-Type"].startswith("text/plain")
    families = {f.name for f in text_string_to_metric_families(scraped.text)}
    assert {
        "mcp_gateway_tool_calls",
        "mcp_gateway_tool_call_duration_seconds",
        "mcp_gateway_http_requests",
        "mcp_gateway_engine_pool_in_use",
        "mcp_gateway_engine_pool_queued",
        "mcp_gateway_engine_pool_size",
        "mcp_gateway_open_streams",
        "mcp_gateway_rate_limit_hits",
        "mcp_gateway_auth_failures",
        "mcp_gateway_catalog_builds",
        "mcp_gateway_catalog_cache_hits",
        "mcp_gateway_idp_fetches",
        "mcp_gateway_idp_fetch_failures",
        "mcp_gateway_audit_write_failures",
    } <= families
    assert (
        value(
            "mcp_gateway_tool_call_duration_seconds_count",
            tenant="acme",
            tool="demo_echo",
        )
        - durations
        == 2
    )
    assert (
        value(
            "mcp_gateway_http_requests_total",
            tenant="acme",
            status="200",
            protocol_version="2025-11-25",
        )
        - requests
        == 2
    )
    assert (
        value(
            "mcp_gateway_http_requests_total",
            tenant="acme",
            status="400",
            protocol_version="other",
        )
        >= 1
    )
    assert value("mcp_gateway_catalog_builds_total", tenant="acme") - builds == 1
    assert value("mcp_gateway_catalog_cache_hits_total", tenant="acme") - hits >= 1


def test_auth_failures_are_counted_by_reason(metrics_on, client, tenant, member):
    bookkeeping.expose(tenant, "demo.fail")
    reader = tokens.issue(tenant, member, scopes=["mcp:tools:read"]).secret
    before = {
        reason: value("mcp_gateway_auth_failures_total", tenant="acme", reason=reason)
        for reason in metrics.AUTH_REASONS
    }

    post_rpc(client, None, "tools/list", None)
    post_rpc(client, "mcp_nope_nope", "tools/list", None)
    post_rpc(client, "mcp_nope_nope", "tools/list", None)
    call(client, reader, "demo_fail")
    post_rpc(client, None, "tools/list", None, slug="nobody-here")

    after = {
        reason: value("mcp_gateway_auth_failures_total", tenant="acme", reason=reason)
        for reason in metrics.AUTH_REASONS
    }
    assert {r: after[r] - before[r] for r in after} == {
        "missing": 1,
        "invalid_token": 2,
        "insufficient_scope": 1,
    }
    assert (
        REGISTRY.get_sample_value(
            "mcp_gateway_auth_failures_total",
            {"tenant": "nobody-here", "reason": "missing"},
        )
        is None
    )  # an unknown slug never becomes a label


def test_audit_write_failures_are_counted(
    metrics_on, client, tenant, token, monkeypatch
):
    bookkeeping.expose(tenant, "demo.echo")
    before = value("mcp_gateway_audit_write_failures_total", tenant="acme")

    def refuse(*args: Any, **kwargs: Any) -> None:
        from django.db import DatabaseError

        raise DatabaseError("disk full")

    monkeypatch.setattr(audit, "_insert", refuse)
    response = call(client, token, "demo_echo", text="x")

    assert response.status_code == 503
    assert value("mcp_gateway_audit_write_failures_total", tenant="acme") - before == 1


def test_the_engine_pool_gauges_follow_a_run(metrics_on):
    from mcp_gateway.runtime import deadlines

    pool = deadlines.engine_pool()
    before = value("mcp_gateway_engine_pool_in_use")

    def inside(context: Any) -> tuple[float, float]:
        return (
            value("mcp_gateway_engine_pool_in_use"),
            value("mcp_gateway_engine_pool_queued"),
        )

    running = pool.submit(inside, None)  # type: ignore[arg-type]
    seen = running.result(timeout=5)
    for _ in range(100):  # the slot is given back just after the result
        if value("mcp_gateway_engine_pool_in_use") == before:
            break
        import time

        time.sleep(0.01)

    assert seen == (before + 1, 0)
    assert value("mcp_gateway_engine_pool_in_use") == before


# A fresh process, since the registry is process-wide: eight threads make the
# first use at once, the interpreter switching between them as often as it can.
FIRST_USE = """
import json, sys, threading
sys.setswitchinterval(1e-6)
from mcp_gateway.observability import metrics
barrier, seen, errors = threading.Barrier(8), [], []
def first_use():
    barrier.wait()
    try:
        seen.append(id(metrics.series()))
    except Exception as exc:
        errors.append(type(exc).__name__)
threads = [threading.Thread(target=first_use) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps({"errors": errors, "series": len(set(seen)), "uses": len(seen)}))
"""


def test_a_first_use_in_several_threads_at_once_registers_the_series_once():
    done = subprocess.run(
        [sys.executable, "-c", FIRST_USE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )

    assert json.loads(done.stdout) == {"errors": [], "series": 1, "uses": 8}


def test_nothing_is_kept_without_the_token(settings, client, tenant, token):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "METRICS_TOKEN": ""}
    bookkeeping.expose(tenant, "demo.echo")
    before = value(
        "mcp_gateway_tool_calls_total", tenant="acme", tool="demo_echo", outcome="ok"
    )

    call(client, token, "demo_echo", text="x")

    assert not metrics.enabled()
    assert client.get("/metrics").status_code == 404
    assert (
        value(
            "mcp_gateway_tool_calls_total",
            tenant="acme",
            tool="demo_echo",
            outcome="ok",
        )
        == before
    )


def test_a_streamed_call_holds_an_open_stream_gauge_until_it_ends(metrics_on):
    from django.http import StreamingHttpResponse
    from django.test import RequestFactory

    from mcp_gateway.observability.observe import Watch, _answered

    request = RequestFactory().post("/t/acme/mcp")
    watch = Watch("acme", True, None)
    watch.tenant = "acme"
    before = value("mcp_gateway_open_streams", tenant="acme")

    response = _answered(request, watch, StreamingHttpResponse(iter([b"a", b"b"])))
    during = value("mcp_gateway_open_streams", tenant="acme")
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]

    assert body == b"ab"
    assert during - before == 1
    assert value("mcp_gateway_open_streams", tenant="acme") == before


def test_a_stream_that_counts_itself_is_not_counted_twice(metrics_on):
    from django.http import StreamingHttpResponse
    from django.test import RequestFactory

    from mcp_gateway.observability.observe import COUNTS_ITSELF, Watch, _answered

    request = RequestFactory().get("/t/acme/mcp")
    watch = Watch("acme", True, None)
    watch.tenant = "acme"
    before = value("mcp_gateway_open_streams", tenant="acme")
    stream = StreamingHttpResponse(iter([b"a"]))
    setattr(stream, COUNTS_ITSELF, True)  # as a change stream's hub does

    response = _answered(request, watch, stream)
    during = value("mcp_gateway_open_streams", tenant="acme")
    b"".join(response.streaming_content)  # type: ignore[attr-defined]

    assert during == before
    assert value("mcp_gateway_open_streams", tenant="acme") == before


def test_idp_fetches_and_failures_are_counted(metrics_on, monkeypatch):
    from mcp_gateway.oauth import fetch, net

    answers = iter([net.Answer(200, b"{}"), net.Answer(500, b"")])
    monkeypatch.setattr(net, "fetch", lambda *a, **k: next(answers))
    host = "idp.example.com"
    fetches = value("mcp_gateway_idp_fetches_total", host=host)
    failures = value("mcp_gateway_idp_fetch_failures_total", host=host)

    fetch.get_json(f"https://{host}/jwks")
    with pytest.raises(fetch.AuthUnavailable):
        fetch.get_json(f"https://{host}/jwks")

    assert value("mcp_gateway_idp_fetches_total", host=host) - fetches == 2
    assert value("mcp_gateway_idp_fetch_failures_total", host=host) - failures == 1


def test_staff_users_are_not_a_metrics_credential(metrics_on, client, db):
    User.objects.create_superuser("root", password="pw")
    client.login(username="root", password="pw")

    assert client.get("/metrics").status_code == 401


def test_a_token_without_the_client_library_is_a_warning(settings, monkeypatch):
    from mcp_gateway import checks

    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "METRICS_TOKEN": SECRET}
    monkeypatch.setattr(metrics, "prometheus_client", None)

    found = [m.id for m in checks.check_settings(None)]

    assert "mcp_gateway.W030" in found
    assert not metrics.enabled()
