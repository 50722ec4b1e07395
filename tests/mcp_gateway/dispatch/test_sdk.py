"""``dispatch.core.handle``/``ahandle`` driven with real tenants and exposures."""

from __future__ import annotations

import asyncio
import logging
from types import MappingProxyType
from typing import Any

import pytest

from engines_app.context import EngineContext, Principal
from engines_app.engine import engine
from engines_app.registry import default_registry
from mcp_gateway import bookkeeping
from mcp_gateway.catalog import Catalog, CatalogEntry, catalog_for, clear_cache
from mcp_gateway.dispatch.core import ahandle, handle
from mcp_gateway.dispatch.scope import CallScope, Outcome
from mcp_gateway.models import Tenant
from mcp_gateway.runtime.adapter import build_tool
from tests.mcp_gateway.dispatch.outcomes import result_of

MODERN = "2026-07-28"
CLIENT_INFO = {"name": "tests", "version": "1.0"}


@pytest.fixture(autouse=True)
def _fresh_catalog_cache() -> None:
    clear_cache()


@pytest.fixture
def proto_tenant(db: None) -> Tenant:
    tenant = Tenant.objects.create(slug="proto", name="Proto")
    for engine_id in ("demo.echo", "demo.add", "demo.fail", "demo.whoami"):
        bookkeeping.expose(tenant, engine_id)
    tenant.refresh_from_db()
    return tenant


def principal_for(tenant: Tenant) -> Principal:
    return Principal(tenant=tenant.slug, user="alice", scopes=frozenset({"mcp:tools"}))


def legacy(
    tenant: Tenant,
    method: str,
    params: Any = None,
    *,
    request_id: Any = 1,
    version: str | None = "2025-11-25",
) -> Outcome:
    headers = {} if version is None else {"MCP-Protocol-Version": version}
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    scope = CallScope(tenant, catalog_for(tenant), principal_for(tenant), headers)
    return handle(message, scope)


def envelope(params: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {**(params or {}), "_meta": meta}


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def modern(
    tenant: Tenant,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    request_id: Any = 1,
    headers: dict[str, str] | None = None,
) -> Outcome:
    name = (params or {}).get("name")
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": envelope(params),
    }
    if headers is None:
        headers = modern_headers(method, name)
    scope = CallScope(tenant, catalog_for(tenant), principal_for(tenant), headers)
    return handle(message, scope)


def error_of(outcome: Outcome) -> dict[str, Any]:
    assert outcome.json is not None
    error: dict[str, Any] = outcome.json["error"]
    return error


# -- Handshake era ------------------------------------------------------------


@pytest.mark.parametrize("requested", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_initialize_answers_a_supported_requested_version(proto_tenant, requested):
    params = {
        "protocolVersion": requested,
        "capabilities": {},
        "clientInfo": CLIENT_INFO,
    }

    outcome = legacy(proto_tenant, "initialize", params, version=None)

    assert outcome.status == 200
    result = result_of(outcome)
    assert result["protocolVersion"] == requested
    assert result["serverInfo"]["name"] == "django-mcp-gateway"
    assert set(result["capabilities"]) == {"tools", "logging"}
    assert "Mcp-Session-Id" not in outcome.headers


@pytest.mark.parametrize("requested", ["2024-11-05", "1999-01-01", "2026-07-28"])
def test_initialize_for_an_unserved_version_gets_2025_11_25(proto_tenant, requested):
    params = {
        "protocolVersion": requested,
        "capabilities": {},
        "clientInfo": CLIENT_INFO,
    }

    outcome = legacy(proto_tenant, "initialize", params, version=None)

    assert result_of(outcome)["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("version", ["2024-11-05", "garbage", "2025-13-01", ""])
def test_unsupported_header_on_the_2025_path_is_400_invalid_request(
    proto_tenant, version
):
    outcome = legacy(proto_tenant, "tools/list", request_id=7, version=version)

    assert outcome.status == 400
    assert outcome.json is not None
    assert outcome.json["id"] == 7
    assert error_of(outcome)["code"] == -32600


def test_a_missing_header_is_served_as_2025_03_26(proto_tenant):
    outcome = legacy(proto_tenant, "tools/list", version=None)

    assert outcome.status == 200
    assert "ttlMs" not in result_of(outcome)


def test_ping_works_without_initialize(proto_tenant):
    outcome = legacy(proto_tenant, "ping")

    assert outcome.status == 200
    assert result_of(outcome) == {}


def test_tools_list_is_sorted_by_name(proto_tenant):
    tools = result_of(legacy(proto_tenant, "tools/list"))["tools"]

    names = [tool["name"] for tool in tools]
    assert names == ["demo_add", "demo_echo", "demo_fail", "demo_whoami"]
    echo = tools[1]
    assert echo["title"] == "Echo"
    assert echo["annotations"]["readOnlyHint"] is True
    assert echo["inputSchema"]["required"] == ["text"]


def test_tools_call_returns_structured_content_and_text(proto_tenant):
    params = {"name": "demo_add", "arguments": {"a": 2, "b": 3}}

    result = result_of(legacy(proto_tenant, "tools/call", params))

    assert result["structuredContent"] == {"sum": 5}
    assert result["content"] == [{"type": "text", "text": '{"sum":5}'}]
    assert result["isError"] is False


def test_the_engine_sees_principal_and_strategy(proto_tenant):
    params = {"name": "demo_whoami"}

    result = result_of(legacy(proto_tenant, "tools/call", params))

    assert result["structuredContent"] == {
        "tenant": "proto",
        "user": "alice",
        "scopes": ["mcp:tools"],
    }


def test_invalid_arguments_are_a_tool_error_with_http_200(proto_tenant):
    params = {"name": "demo_echo", "arguments": {"text": 3}}

    outcome = legacy(proto_tenant, "tools/call", params)

    assert outcome.status == 200
    result = result_of(outcome)
    assert result["isError"] is True
    assert "/text" in result["content"][0]["text"]


def test_internal_failure_is_a_generic_tool_error(proto_tenant, caplog):
    params = {"name": "demo_fail", "arguments": {}}

    with caplog.at_level(logging.ERROR, logger="mcp_gateway"):
        outcome = legacy(proto_tenant, "tools/call", params)

    result = result_of(outcome)
    assert result["isError"] is True
    assert "SECRET" not in str(outcome.json)
    assert "EXECUTION_FAILED" in result["content"][0]["text"]
    assert "SECRET" in caplog.text


def test_unknown_tool_is_invalid_params_on_the_2025_wire(proto_tenant):
    params = {"name": "demo_reject", "arguments": {}}

    outcome = legacy(proto_tenant, "tools/call", params)

    assert outcome.status == 200
    assert error_of(outcome)["code"] == -32602


COMPLETE = {
    "ref": {"type": "ref/prompt", "name": "p"},
    "argument": {"name": "a", "value": "b"},
}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("resources/list", {}),
        ("prompts/list", {}),
        ("completion/complete", COMPLETE),
        ("no/such", {}),
    ],
)
def test_unserved_methods_are_method_not_found_with_http_200(
    proto_tenant, method, params
):
    outcome = legacy(proto_tenant, method, params)

    assert outcome.status == 200
    assert error_of(outcome)["code"] == -32601


def test_logging_set_level_is_accepted_and_forgotten_on_the_2025_wires(
    proto_tenant,
):
    outcome = legacy(proto_tenant, "logging/setLevel", {"level": "debug"})

    assert outcome.status == 200
    assert result_of(outcome) == {}


def test_array_params_on_a_known_method_are_invalid_params(proto_tenant):
    outcome = legacy(proto_tenant, "tools/call", ["demo_echo"])

    assert error_of(outcome)["code"] == -32602


def test_server_discover_is_method_not_found_on_the_2025_wire(proto_tenant):
    outcome = legacy(proto_tenant, "server/discover")

    assert outcome.status == 200
    assert error_of(outcome)["code"] == -32601


@pytest.mark.parametrize("request_id", [0, "", "1", 9007199254740993, -5, "abc"])
def test_request_ids_keep_type_and_value(proto_tenant, request_id):
    outcome = legacy(proto_tenant, "ping", request_id=request_id)

    assert outcome.json is not None
    assert outcome.json["id"] == request_id
    assert type(outcome.json["id"]) is type(request_id)


@pytest.mark.parametrize("request_id", [0, "", 9007199254740993])
def test_error_responses_keep_the_request_id(proto_tenant, request_id):
    outcome = legacy(proto_tenant, "no/such", request_id=request_id)

    assert outcome.json is not None
    assert outcome.json["id"] == request_id
    assert type(outcome.json["id"]) is type(request_id)


def test_stale_exposures_are_never_served(proto_tenant):
    proto_tenant.exposures.create(
        engine_id="gone.engine", tool_name="gone_engine", fingerprint="x"
    )
    Tenant.objects.filter(pk=proto_tenant.pk).update(catalog_version=99)
    proto_tenant.refresh_from_db()

    names = [t["name"] for t in result_of(legacy(proto_tenant, "tools/list"))["tools"]]

    assert "gone_engine" not in names
    assert len(names) == 4


# -- 2026-07-28 ---------------------------------------------------------------


def test_server_discover_names_the_modern_version(proto_tenant):
    outcome = modern(proto_tenant, "server/discover")

    assert outcome.status == 200
    result = result_of(outcome)
    assert result["supportedVersions"] == [MODERN]
    assert "tools" in result["capabilities"]
    assert result["resultType"] == "complete"
    stamp = result["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert stamp["name"] == "django-mcp-gateway"


def test_modern_tools_list_is_cacheable_and_private(proto_tenant, settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "TOOLS_LIST_TTL_MS": 1234}

    result = result_of(modern(proto_tenant, "tools/list"))

    assert result["ttlMs"] == 1234
    assert result["cacheScope"] == "private"
    assert result["tools"][0]["name"] == "demo_add"


def test_modern_tools_call(proto_tenant):
    params = {"name": "demo_add", "arguments": {"a": 1, "b": 1}}

    result = result_of(modern(proto_tenant, "tools/call", params))

    assert result["structuredContent"] == {"sum": 2}
    assert result["resultType"] == "complete"


def test_modern_tool_errors_are_http_200(proto_tenant):
    params = {"name": "demo_fail", "arguments": {}}

    outcome = modern(proto_tenant, "tools/call", params)

    assert outcome.status == 200
    assert result_of(outcome)["isError"] is True


def test_modern_unknown_tool_is_invalid_params_with_http_400(proto_tenant):
    params = {"name": "nope", "arguments": {}}

    outcome = modern(proto_tenant, "tools/call", params)

    assert outcome.status == 400
    assert error_of(outcome)["code"] == -32602


def test_modern_unserved_method_is_http_404(proto_tenant):
    outcome = modern(proto_tenant, "resources/list")

    assert outcome.status == 404
    assert error_of(outcome)["code"] == -32601


def test_method_header_mismatch_is_400_header_mismatch(proto_tenant):
    headers = modern_headers("tools/call")

    outcome = modern(proto_tenant, "tools/list", headers=headers)

    assert outcome.status == 400
    assert error_of(outcome)["code"] == -32020


def test_name_header_mismatch_is_400_header_mismatch(proto_tenant):
    params = {"name": "demo_add", "arguments": {"a": 1, "b": 1}}
    headers = modern_headers("tools/call", "demo_echo")

    outcome = modern(proto_tenant, "tools/call", params, headers=headers)

    assert outcome.status == 400
    assert error_of(outcome)["code"] == -32020


def test_whitespace_around_header_values_is_not_part_of_them(proto_tenant):
    # RFC 9110 5.5: a field value excludes the OWS around it; uvicorn keeps it.
    params = {"name": "demo_add", "arguments": {"a": 1, "b": 1}}
    headers = {
        "MCP-Protocol-Version": f" {MODERN}\t",
        "Mcp-Method": "  tools/call ",
        "Mcp-Name": "  demo_add  ",
    }

    outcome = modern(proto_tenant, "tools/call", params, headers=headers)

    assert outcome.status == 200
    assert result_of(outcome)["structuredContent"] == {"sum": 2}


def test_envelope_version_differing_from_the_header_is_a_mismatch(proto_tenant):
    headers = {**modern_headers("tools/list"), "MCP-Protocol-Version": "2027-01-01"}

    outcome = modern(proto_tenant, "tools/list", headers=headers)

    assert outcome.status == 400
    assert error_of(outcome)["code"] == -32020


def test_an_unsupported_modern_version_is_400_with_the_supported_list(proto_tenant):
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2027-01-01",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    headers = {"MCP-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"}
    scope = CallScope(
        proto_tenant, catalog_for(proto_tenant), principal_for(proto_tenant), headers
    )

    outcome = handle(message, scope)

    assert outcome.status == 400
    error = error_of(outcome)
    assert error["code"] == -32022
    assert error["data"]["supported"] == [MODERN]
    assert error["data"]["requested"] == "2027-01-01"


def test_modern_header_without_envelope_is_invalid_params(proto_tenant):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    scope = CallScope(
        proto_tenant,
        catalog_for(proto_tenant),
        principal_for(proto_tenant),
        modern_headers("tools/list"),
    )

    outcome = handle(message, scope)

    assert outcome.status == 400
    assert error_of(outcome)["code"] == -32602


def test_modern_ids_keep_type_and_value(proto_tenant):
    outcome = modern(proto_tenant, "tools/list", request_id=9007199254740993)

    assert outcome.json is not None
    assert outcome.json["id"] == 9007199254740993


# -- Catalog caching ------------------------------------------------------------


def test_catalog_is_built_with_one_query_and_then_cached(
    proto_tenant, django_assert_num_queries
):
    with django_assert_num_queries(1):
        first = catalog_for(proto_tenant)
    with django_assert_num_queries(0):
        second = catalog_for(proto_tenant)

    assert first is second
    assert isinstance(first, Catalog)


def test_a_new_catalog_version_rebuilds_the_catalog(proto_tenant):
    before = catalog_for(proto_tenant)

    bookkeeping.expose(proto_tenant, "demo.reject")
    proto_tenant.refresh_from_db()
    after = catalog_for(proto_tenant)

    assert "demo_reject" not in before
    assert "demo_reject" in after


# -- Async twin -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_ahandle_runs_sync_engines_in_a_thread():
    tenant = Tenant.objects.create(slug="proto-async", name="Async")
    bookkeeping.expose(tenant, "demo.add")
    tenant.refresh_from_db()
    scope = CallScope(
        tenant,
        catalog_for(tenant),
        principal_for(tenant),
        {"MCP-Protocol-Version": "2025-11-25"},
    )
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "demo_add", "arguments": {"a": 1, "b": 2}},
    }

    outcome = asyncio.run(ahandle(message, scope))

    assert result_of(outcome)["structuredContent"] == {"sum": 3}


def test_handle_refuses_to_run_inside_a_running_loop(proto_tenant):
    scope = CallScope(
        proto_tenant, catalog_for(proto_tenant), principal_for(proto_tenant), {}
    )
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    async def inside() -> None:
        handle(message, scope)

    with pytest.raises(RuntimeError, match="running event loop"):
        asyncio.run(inside())


# -- Mcp-Param-* headers, notifications, internal failures --------------------


@engine(
    "test.region",
    name="Region",
    description="Echo a region routed by header.",
    input_schema={
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    },
)
def region_engine(context: EngineContext) -> dict[str, Any]:
    return {"region": context.request.input.get("region")}


def catalog_of(*engines: Any) -> Catalog:
    entries = {
        build_tool(target).name: CatalogEntry(target, build_tool(target))
        for target in engines
    }
    return Catalog(MappingProxyType(entries))


def region_call(tenant: Tenant, arguments: dict[str, Any], extra: dict[str, str]):
    params = {"name": "test_region", "arguments": arguments}
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": envelope(params),
    }
    headers = {**modern_headers("tools/call", "test_region"), **extra}
    scope = CallScope(tenant, catalog_of(region_engine), principal_for(tenant), headers)
    return handle(message, scope)


def test_a_matching_mcp_param_header_is_served(proto_tenant):
    outcome = region_call(proto_tenant, {"region": "eu"}, {"Mcp-Param-Region": "eu"})

    assert outcome.status == 200
    assert result_of(outcome)["structuredContent"] == {"region": "eu"}


@pytest.mark.parametrize(
    ("arguments", "extra"),
    [
        ({"region": "eu"}, {"Mcp-Param-Region": "us"}),
        ({"region": "eu"}, {}),
        ({}, {"mcp-param-region": "eu"}),
    ],
)
def test_a_disagreeing_mcp_param_header_is_400_header_mismatch(
    proto_tenant, arguments, extra
):
    outcome = region_call(proto_tenant, arguments, extra)

    assert outcome.status == 400
    assert error_of(outcome)["code"] == -32020


def test_mcp_param_headers_are_not_checked_on_the_2025_wire(proto_tenant):
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "test_region", "arguments": {"region": "eu"}},
    }
    headers = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Param-Region": "us"}
    scope = CallScope(
        proto_tenant, catalog_of(region_engine), principal_for(proto_tenant), headers
    )

    outcome = handle(message, scope)

    assert result_of(outcome)["structuredContent"] == {"region": "eu"}


def test_a_notification_is_accepted_without_a_body(proto_tenant):
    message = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    scope = CallScope(
        proto_tenant, catalog_for(proto_tenant), principal_for(proto_tenant), {}
    )

    outcome = handle(message, scope)

    assert (outcome.status, outcome.json) == (202, None)


class BrokenCatalog(Catalog):
    def tools(self) -> list[Any]:
        raise RuntimeError("SECRET catalog detail")


@pytest.mark.parametrize("era", ["2025", "2026"])
def test_internal_failure_is_a_generic_internal_error(proto_tenant, caplog, era):
    broken = BrokenCatalog(MappingProxyType({}))
    if era == "2025":
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
        headers = {"MCP-Protocol-Version": "2025-11-25"}
    else:
        message = {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/list",
            "params": envelope(),
        }
        headers = modern_headers("tools/list")
    scope = CallScope(proto_tenant, broken, principal_for(proto_tenant), headers)

    with caplog.at_level(logging.ERROR, logger="mcp_gateway"):
        outcome = handle(message, scope)

    assert outcome.status == 200
    assert error_of(outcome) == {"code": -32603, "message": "Internal error"}
    assert "SECRET" not in str(outcome.json)
    assert "SECRET" in caplog.text


def test_an_enveloped_request_with_a_2025_header_is_refused(proto_tenant):
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": envelope(),
    }
    scope = CallScope(
        proto_tenant,
        catalog_for(proto_tenant),
        principal_for(proto_tenant),
        {"MCP-Protocol-Version": "2025-11-25"},
    )

    outcome = handle(message, scope)

    assert outcome.status == 400
    assert error_of(outcome)["code"] == -32600


def test_an_enveloped_request_without_a_header_is_a_header_mismatch(proto_tenant):
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": envelope(),
    }
    scope = CallScope(
        proto_tenant, catalog_for(proto_tenant), principal_for(proto_tenant), {}
    )

    outcome = handle(message, scope)

    assert outcome.status == 400
    assert error_of(outcome)["code"] == -32020


def test_omitted_arguments_default_to_an_empty_object(proto_tenant):
    outcome = legacy(proto_tenant, "tools/call", {"name": "demo_whoami"})

    assert result_of(outcome)["isError"] is False


# -- Where engines run ------------------------------------------------------------


@engine("test.orm", name="ORM", description="Count tenants with the ORM.")
def orm_engine(context: EngineContext) -> dict[str, Any]:
    return {"tenants": Tenant.objects.count()}


def call_message(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def test_sync_engines_under_handle_may_use_the_orm(proto_tenant):
    scope = CallScope(
        proto_tenant, catalog_of(orm_engine), principal_for(proto_tenant), {}
    )

    outcome = handle(call_message("test_orm"), scope)

    assert result_of(outcome)["structuredContent"] == {"tenants": 1}


def test_async_engines_under_handle_report_progress_to_the_sink(proto_tenant):
    reports: list[tuple[float, float | None, str | None]] = []
    logs: list[tuple[str, str]] = []
    progress = default_registry.get("test_tool_with_progress")
    logging_engine = default_registry.get("test_tool_with_logging")
    scope = CallScope(
        proto_tenant,
        catalog_of(progress, logging_engine),
        principal_for(proto_tenant),
        {},
        progress_sink=lambda done, total, text: reports.append((done, total, text)),
        log_sink=lambda level, text: logs.append((level, text)),
    )

    first = handle(call_message("test_tool_with_progress"), scope)
    second = handle(call_message("test_tool_with_logging"), scope)

    assert result_of(first)["isError"] is False
    assert result_of(second)["isError"] is False
    assert [done for done, _, _ in reports] == [0, 50, 100]
    assert len(logs) == 3


def test_ahandle_serves_the_modern_era(proto_tenant):
    params = {"name": "demo_echo", "arguments": {"text": "hé"}}
    message = {
        "jsonrpc": "2.0",
        "id": "x",
        "method": "tools/call",
        "params": envelope(params),
    }
    scope = CallScope(
        proto_tenant,
        catalog_for(proto_tenant),
        principal_for(proto_tenant),
        modern_headers("tools/call", "demo_echo"),
    )

    outcome = asyncio.run(ahandle(message, scope))

    result = result_of(outcome)
    assert result["structuredContent"] == {"text": "hé"}
    assert result["content"][0]["text"] == '{"text":"hé"}'
    assert result["resultType"] == "complete"
