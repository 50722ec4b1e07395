"""The dispatcher's own handlers answer as the SDK would.

Every plain ``tools/list`` and ``tools/call`` is answered twice by the one
dispatcher: as it chooses (its own handler) and with ``through_sdk=True``
(the SDK's ``serve_one``), each with a fresh scope, and the two must agree
on status, headers, body and audit record. Requests the dispatcher must
leave to the SDK are those :func:`core.select` gives ``None``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from demo import basic, conformance
from demo.models import Note
from engines_app.context import Principal
from engines_app.engine import Engine, engine
from engines_app.interaction import InputRequest
from engines_app.registry import default_registry
from mcp_gateway import bookkeeping
from mcp_gateway.audit.callrecord import CallRecord
from mcp_gateway.catalog import catalog_for, clear_cache
from mcp_gateway.dispatch import core, era
from mcp_gateway.dispatch.core import ahandle, handle
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.models import Tenant

MODERN = "2026-07-28"
ENGINES = [
    *(cls.id for cls in (*basic.ENGINES, *conformance.ENGINES)),
    "demo.delete_note",
]


@pytest.fixture(autouse=True)
def _fresh_catalog_cache() -> Iterator[None]:
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def hot_tenant(db: None) -> Tenant:
    tenant = Tenant.objects.create(slug="hot", name="Hot")
    bookkeeping.expose_many(tenant, ENGINES)
    tenant.refresh_from_db()
    return tenant


def scope_for(tenant: Tenant, headers: dict[str, str]) -> CallScope:
    principal = Principal(
        tenant=tenant.slug,
        tenant_id=tenant.pk,
        user="alice",
        token="abc",
        scopes=frozenset({"mcp:tools"}),
    )
    return CallScope(
        tenant, catalog_for(tenant), principal, headers, record=CallRecord()
    )


def envelope(params: dict[str, Any], capabilities: Any = None) -> dict[str, Any]:
    meta = {
        **params.get("_meta", {}),
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    return {**params, "_meta": meta}


def request(
    era: str, method: str, params: dict[str, Any] | None, request_id: Any = 7
) -> tuple[dict[str, Any], dict[str, str]]:
    """A message and its headers at ``era`` ("none": no version header)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    headers: dict[str, str] = {}
    if era == MODERN:
        params = envelope(params or {})
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
    elif era != "none":
        headers = {"MCP-Protocol-Version": era}
    if params is not None:
        message["params"] = params
    return message, headers


def body_of(outcome: Outcome) -> Any:
    if outcome.encoded is not None:
        assert outcome.body is None
        return json.loads(outcome.encoded)
    return outcome.body


def chosen(message: dict[str, Any], scope: CallScope) -> object:
    """Who the dispatcher picks for ``message``: ``None`` is the SDK."""
    route = era.route_of(message, scope.headers)
    if isinstance(route, era.Rejection):
        return None
    return core.select(message["method"], message.get("params"), route, scope.catalog)


def both(
    tenant: Tenant,
    message: dict[str, Any],
    headers: dict[str, str],
    *,
    run_async: bool = False,
) -> tuple[Outcome, CallScope, Outcome, CallScope]:
    """Answer ``message`` by the dispatcher's choice and through the SDK."""
    hot_scope, sdk_scope = scope_for(tenant, headers), scope_for(tenant, headers)
    assert chosen(message, hot_scope) is not None, "left a plain request to the SDK"
    copy = json.loads(json.dumps(message))
    hot = (
        asyncio.run(ahandle(copy, hot_scope)) if run_async else handle(copy, hot_scope)
    )
    copy = json.loads(json.dumps(message))
    sdk = (
        asyncio.run(ahandle(copy, sdk_scope, through_sdk=True))
        if run_async
        else handle(copy, sdk_scope, through_sdk=True)
    )
    return hot, hot_scope, sdk, sdk_scope


def assert_same(hot: Outcome, sdk: Outcome) -> None:
    assert (hot.status, hot.headers) == (sdk.status, sdk.headers)
    assert body_of(hot) == body_of(sdk)


def assert_same_record(hot: CallScope, sdk: CallScope) -> None:
    assert hot.record is not None
    assert sdk.record is not None
    fields = (
        "outcome",
        "tool_name",
        "engine_id",
        "engine_version",
        "request_id",
        "protocol_version",
        "arguments",
        "error_code",
    )
    assert {f: getattr(hot.record, f) for f in fields} == {
        f: getattr(sdk.record, f) for f in fields
    }


ERAS = ("none", "2025-03-26", "2025-06-18", "2025-11-25", MODERN)
CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("demo_echo", {"text": "héllo"}),
    ("demo_echo", {"text": 5}),
    ("demo_echo", {}),
    ("demo_add", {"a": 2, "b": 3.5}),
    ("demo_whoami", {}),
    ("demo_fail", {}),
    ("demo_reject", {}),
    ("demo_slow", {"seconds": 0}),
    ("test_simple_text", {}),
    ("test_image_content", {}),
    ("test_audio_content", {}),
    ("test_embedded_resource", {}),
    ("test_multiple_content_types", {}),
    ("test_error_handling", {}),
    ("json_schema_2020_12_tool", {"name": "x", "address": {"street": "s"}}),
    ("json_schema_2020_12_tool", {"name": 1}),
    ("test_tool_with_logging", {}),  # an async engine
)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("name", "arguments"), CALLS)
def test_tools_call_answers_as_the_sdk(
    hot_tenant: Tenant, era: str, name: str, arguments: dict[str, Any]
) -> None:
    message, headers = request(
        era, "tools/call", {"name": name, "arguments": arguments}
    )
    hot, hot_scope, sdk, sdk_scope = both(hot_tenant, message, headers)
    assert_same(hot, sdk)
    assert_same_record(hot_scope, sdk_scope)


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
@pytest.mark.parametrize(("name", "arguments"), CALLS)
def test_the_async_twin_answers_as_the_sdk(
    hot_tenant: Tenant, era: str, name: str, arguments: dict[str, Any]
) -> None:
    params = {"name": name, "arguments": arguments}
    message, headers = request(era, "tools/call", params)
    hot, hot_scope, sdk, sdk_scope = both(hot_tenant, message, headers, run_async=True)
    assert_same(hot, sdk)
    assert_same_record(hot_scope, sdk_scope)


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
def test_the_async_twin_lists_as_the_sdk(hot_tenant: Tenant, era: str) -> None:
    message, headers = request(era, "tools/list", None)
    hot, _, sdk, _ = both(hot_tenant, message, headers, run_async=True)
    assert_same(hot, sdk)
    again = asyncio.run(ahandle(message, scope_for(hot_tenant, headers)))
    assert again is not None
    assert body_of(again) == body_of(sdk)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    "params",
    [
        {"name": "demo_whoami"},  # no arguments at all
        {
            "name": "demo_echo",
            "arguments": {"text": "x"},
            "_meta": {"progressToken": 3},
        },
        {
            "name": "demo_echo",
            "arguments": {"text": "x"},
            "_meta": {"progressToken": "p"},
        },
        {"name": "demo_echo", "arguments": {"text": "x"}, "_meta": {"other": [1]}},
    ],
)
def test_call_params_shapes_answer_as_the_sdk(
    hot_tenant: Tenant, era: str, params: dict[str, Any]
) -> None:
    message, headers = request(era, "tools/call", params, request_id="abc-1")
    hot, hot_scope, sdk, sdk_scope = both(hot_tenant, message, headers)
    assert_same(hot, sdk)
    assert_same_record(hot_scope, sdk_scope)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    "params", [None, {}, {"cursor": "next"}, {"_meta": {"progressToken": 1}}]
)
def test_tools_list_answers_as_the_sdk_and_is_encoded_once(
    hot_tenant: Tenant, era: str, params: dict[str, Any] | None
) -> None:
    message, headers = request(era, "tools/list", params)
    first, _, sdk, _ = both(hot_tenant, message, headers)
    assert_same(first, sdk)
    catalog = catalog_for(hot_tenant)
    assert core.encoded_lists.count(catalog) == 1  # one for this revision
    message["id"] = "second"
    again = handle(message, scope_for(hot_tenant, headers))
    assert again is not None
    assert body_of(again) == {**body_of(sdk), "id": "second"}
    assert core.encoded_lists.count(catalog) == 1


def test_tools_list_follows_the_catalog_version(hot_tenant: Tenant) -> None:
    message, headers = request("2025-11-25", "tools/list", None)
    before = handle(message, scope_for(hot_tenant, headers))
    bookkeeping.unexpose(hot_tenant, "demo.echo")
    hot_tenant.refresh_from_db()
    after = handle(message, scope_for(hot_tenant, headers))
    assert before is not None
    assert after is not None
    names = [tool["name"] for tool in body_of(after)["result"]["tools"]]
    assert "demo_echo" in [t["name"] for t in body_of(before)["result"]["tools"]]
    assert "demo_echo" not in names
    assert body_of(after)["result"]["_meta"] == {
        "io.github.django-mcp-gateway/catalogVersion": hot_tenant.catalog_version
    }


def test_tools_list_answer_follows_the_settings(hot_tenant: Tenant) -> None:
    message, headers = request(MODERN, "tools/list", None)
    first = handle(message, scope_for(hot_tenant, headers))
    with override_settings(MCP_GATEWAY={"TOOLS_LIST_TTL_MS": 5}):
        changed = handle(message, scope_for(hot_tenant, headers))
    assert first is not None
    assert changed is not None
    assert body_of(first)["result"]["ttlMs"] == 60_000
    assert body_of(changed)["result"]["ttlMs"] == 5


@pytest.mark.parametrize(
    ("era", "method", "params", "headers"),
    [
        ("2025-11-25", "initialize", {}, None),
        ("2025-11-25", "ping", None, None),
        ("2025-11-25", "tools/call", None, None),
        ("2025-11-25", "tools/call", {"name": "no_such_tool"}, None),
        ("2025-11-25", "tools/call", {"name": 5}, None),
        ("2025-11-25", "tools/call", {"name": "demo_echo", "arguments": []}, None),
        ("2025-11-25", "tools/call", {"name": "demo_echo", "arguments": None}, None),
        ("2025-11-25", "tools/call", {"name": "demo_echo", "task": {}}, None),
        ("2025-11-25", "tools/call", {"name": "demo_echo", "_meta": []}, None),
        (
            "2025-11-25",
            "tools/call",
            {"name": "demo_echo", "_meta": {"progressToken": True}},
            None,
        ),
        ("2025-11-25", "tools/list", {"cursor": 5}, None),
        ("2025-11-25", "tools/list", [], None),
        ("2024-11-05", "tools/list", None, None),
        (MODERN, "tools/call", {"name": "demo_echo", "requestState": "x"}, None),
        (MODERN, "tools/call", {"name": "demo_echo", "inputResponses": {}}, None),
        (MODERN, "tools/list", None, {"MCP-Protocol-Version": MODERN}),
        (
            MODERN,
            "tools/call",
            {"name": "demo_echo"},
            {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"},
        ),
    ],
)
def test_requests_left_to_the_sdk(
    hot_tenant: Tenant,
    era: str,
    method: str,
    params: Any,
    headers: dict[str, str] | None,
) -> None:
    message, default_headers = (
        request(era, method, params)
        if isinstance(params, dict) or params is None
        else ({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, {})
    )
    scope = scope_for(hot_tenant, default_headers if headers is None else headers)
    assert chosen(message, scope) is None


def test_a_client_that_can_be_asked_takes_the_sdk_path(hot_tenant: Tenant) -> None:
    message, headers = request(MODERN, "tools/call", {"name": "demo_echo"})
    message["params"] = envelope(
        {"name": "demo_echo", "arguments": {"text": "x"}}, {"elicitation": {}}
    )
    assert chosen(message, scope_for(hot_tenant, headers)) is None


def test_an_engine_asking_on_a_legacy_wire_is_a_tool_error_on_both_paths(
    hot_tenant: Tenant,
) -> None:
    note = Note.objects.create(tenant=hot_tenant, title="Keep me")
    arguments = {"id": note.pk}
    message, headers = request(
        "2025-11-25", "tools/call", {"name": "demo_delete_note", "arguments": arguments}
    )
    hot, hot_scope, sdk, sdk_scope = both(hot_tenant, message, headers)
    assert_same(hot, sdk)
    assert_same_record(hot_scope, sdk_scope)
    assert "INPUT_UNAVAILABLE" in body_of(hot)["result"]["content"][0]["text"]
    assert Note.objects.filter(pk=note.pk).exists()


@pytest.fixture
def pool_engines() -> Iterator[None]:
    @engine("hot.pooled", name="Pooled", description="Runs in the engine pool.")
    def pooled(context: Any) -> dict[str, Any]:
        return {"thread": __import__("threading").current_thread().name}

    class Sleepy(Engine):
        id = "hot.sleepy"
        name = "Sleepy"
        description = "Sleeps past its deadline, whatever it is told."
        deadline_seconds = 0.2

        def execute(self, context: Any) -> Any:
            time.sleep(0.6)  # ignores the signal: only the deadline stops the wait
            return InputRequest(message="never", fields={})

    for item in (pooled, Sleepy()):
        default_registry.register(item)
    yield
    for engine_id in ("hot.pooled", "hot.sleepy"):
        default_registry.unregister(engine_id)


@pytest.mark.django_db(transaction=True)
def test_sync_engines_run_in_the_pool_with_their_deadline(pool_engines: None) -> None:
    tenant = Tenant.objects.create(slug="pool", name="Pool")
    bookkeeping.expose_many(tenant, ["hot.pooled", "hot.sleepy", "demo.echo"])
    tenant.refresh_from_db()
    answers = {}
    for name in ("hot_pooled", "hot_sleepy"):
        message, headers = request("2025-11-25", "tools/call", {"name": name})
        scope = scope_for(tenant, headers)
        outcome = handle(message, scope)
        assert outcome is not None
        assert scope.record is not None
        answers[name] = (body_of(outcome)["result"], scope.record.outcome)
    pooled, recorded = answers["hot_pooled"]
    assert pooled["structuredContent"]["thread"].startswith("mcp-engine")
    assert recorded == "ok"
    slept, recorded = answers["hot_sleepy"]
    assert slept["isError"] is True
    assert json.loads(slept["content"][0]["text"])["code"] == "TIMEOUT"
    assert recorded == "timeout"
