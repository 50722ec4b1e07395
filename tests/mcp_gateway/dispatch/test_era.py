"""Which revision a request speaks, from its header and its envelope."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_gateway.dispatch import era
from mcp_gateway.dispatch.versions import (
    DEFAULT_VERSION,
    HANDSHAKE_VERSIONS,
    SUPPORTED_VERSIONS,
)

MODERN = "2026-07-28"


def message(method: str = "tools/list", params: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    return body


def test_no_header_and_no_envelope_is_the_default_revision():
    route = era.route_of(message(), {})

    assert route == era.Route(DEFAULT_VERSION, modern=False)


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_a_handshake_header_is_read_in_any_case(version):
    assert era.route_of(message(), {"mcp-protocol-version": version}) == era.Route(
        version, modern=False
    )


def test_an_unsupported_header_is_400_naming_the_supported_revisions():
    route = era.route_of(message(), {"MCP-Protocol-Version": "2024-11-05"})

    assert isinstance(route, era.Rejection)
    assert route.status == 400
    assert route.error.data == {"supported": list(SUPPORTED_VERSIONS)}


def test_the_envelope_on_a_handshake_wire_is_refused():
    params = {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}

    route = era.route_of(
        message("tools/list", params), {"MCP-Protocol-Version": "2025-11-25"}
    )

    assert isinstance(route, era.Rejection)
    assert route.status == 400


def test_initialize_never_opens_the_modern_era():
    params = {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}

    route = era.route_of(message("initialize", params), {})

    assert route == era.Route(DEFAULT_VERSION, modern=False)


def test_an_initialize_for_an_unserved_revision_asks_for_the_latest():
    params = {"protocolVersion": "2099-01-01", "capabilities": {}}

    negotiated = era.negotiable("initialize", params)

    assert negotiated["protocolVersion"] != "2099-01-01"
    assert negotiated["protocolVersion"] in HANDSHAKE_VERSIONS
    assert era.negotiable("tools/list", params) is params
