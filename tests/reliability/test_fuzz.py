"""Property-based fuzzing: the parser and the boundary never fail with a 5xx."""

from __future__ import annotations

import json
import logging

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_gateway import bookkeeping, jsonrpc, tokens
from mcp_gateway.models import Tenant

FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
METHODS = st.sampled_from(["tools/call", "tools/list", "ping", "initialize"])
MESSAGES = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "method": METHODS},
    optional={"id": JSON, "params": JSON},
)
HEADER_VALUE = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


@FUZZ
@given(st.binary(max_size=300))
def test_the_parser_only_raises_its_own_errors_on_bytes(data):
    code = None
    try:
        jsonrpc.parse(data)
    except jsonrpc.JsonRpcError as exc:
        code = exc.code

    assert code in (None, jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST)


@FUZZ
@given(JSON | MESSAGES)
def test_the_parser_classifies_any_json(value):
    kind = code = None
    try:
        kind = jsonrpc.parse(json.dumps(value).encode()).kind
    except jsonrpc.JsonRpcError as exc:
        code = exc.code

    assert (kind, code) in {
        (None, jsonrpc.INVALID_REQUEST),
        (None, jsonrpc.PARSE_ERROR),  # lone surrogates are not Unicode
        ("request", None),
        ("notification", None),
        ("response", None),
    }


@pytest.fixture
def secret(tenant: Tenant, issued_token: tokens.IssuedToken) -> str:
    bookkeeping.expose_many(tenant, ["demo.echo", "test.probe"])
    return issued_token.secret


def check(response) -> None:
    assert response.status_code < 500, response.content[:300]
    assert b"Traceback" not in response.content


@FUZZ
@given(body=st.binary(max_size=200), content_type=HEADER_VALUE, accept=HEADER_VALUE)
def test_arbitrary_bytes_and_headers_never_give_a_5xx(
    client: Client, secret, caplog, body, content_type, accept
):
    with caplog.at_level(logging.ERROR):
        response = client.post(
            "/t/acme/mcp",
            body,
            content_type=content_type,
            headers={"Authorization": f"Bearer {secret}", "Accept": accept},
        )

    check(response)
    assert "Traceback" not in caplog.text


@FUZZ
@given(message=MESSAGES, version=st.sampled_from(["", "2025-06-18", "2026-07-28", "x"]))
def test_arbitrary_messages_never_give_a_5xx(client: Client, secret, message, version):
    headers = {"Authorization": f"Bearer {secret}"}
    if version:
        headers["MCP-Protocol-Version"] = version

    response = client.post(
        "/t/acme/mcp",
        json.dumps(message),
        content_type="application/json",
        headers=headers,
    )

    check(response)


def _with_number(number: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + number + b"}}"


@pytest.mark.parametrize(
    "number", [b"1e999", b"-1e999", b"1E400", b"2e308", b"9e+9999"]
)
def test_a_number_overflowing_to_infinity_is_a_parse_error(number):
    with pytest.raises(jsonrpc.ParseError):
        jsonrpc.parse(_with_number(number))


@pytest.mark.parametrize(
    ("number", "value"),
    [
        (b"1.7976931348623157e308", 1.7976931348623157e308),
        (b"1e-999", 0.0),
        (b"-0.0", -0.0),
        (b"1" + b"0" * 300, 10**300),
    ],
)
def test_large_finite_numbers_and_underflow_still_parse(number, value):
    assert jsonrpc.parse(_with_number(number)).payload["params"]["x"] == value
