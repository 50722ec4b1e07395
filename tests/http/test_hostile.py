"""Hostile and malformed requests, as raw bytes over a real socket.

Each case asserts the exact status, the headers that matter and the JSON-RPC
code; that no engine ran (the probe tool would record it); and that nothing
was written but the audit row of a ``tools/call`` that reached dispatch.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.authtoken.models import Token

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.audit.models import ExposureEvent, ToolCall
from mcp_gateway.models import ApiToken, Exposure, Membership, Tenant
from tests.live import rawhttp
from tests.live.servers import Server

HTTPTOOLS = importlib.util.find_spec("httptools") is not None

pytestmark = pytest.mark.django_db(transaction=True)

PATH = "/t/acme/mcp"
NO_ID = object()


def rpc(method: str = "tools/call", params: Any = None, id: Any = 7) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not NO_ID:
        message["id"] = id
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def call(name: Any = "test_probe", arguments: Any = None, **extra: Any) -> bytes:
    params: dict[str, Any] = {"name": name, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return rpc(params=params)


CALL = call()


@dataclass(frozen=True)
class Case:
    name: str
    status: int
    code: int | None = None
    body: bytes = CALL
    target: str = PATH
    method: str = "POST"
    host: str | None = None
    auth: str | None = "good"  # "good", None, or a literal header value
    content_type: str | None = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    expect_headers: dict[str, str] = field(default_factory=dict)
    id: Any = NO_ID  # the id the error body must carry; NO_ID: none
    audited: int = 0
    result_error: bool = False  # an isError tool result (HTTP 200)
    raw: bytes | None = None
    """Bytes sent as they are ({secret} and {host} filled in), for framing
    that ``rawhttp.request`` would not produce."""
    by_server: bool = False
    """The server itself may refuse it before Django sees it (a plain 400)."""


def raw(*lines: str, body: bytes = b"") -> bytes:
    """An HTTP/1.1 request to the mount, with exactly these header lines."""
    head = [f"POST {PATH} HTTP/1.1", *lines, "Connection: close"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


AUTH_LINES = ("Authorization: Bearer {secret}", "Content-Type: application/json")


def chunked(size_line: bytes) -> bytes:
    return raw(
        "Host: {host}",
        *AUTH_LINES,
        "Transfer-Encoding: chunked",
        body=size_line + b"\r\n" + CALL + b"\r\n0\r\n\r\n",
    )


def cases() -> list[Case]:
    bad_path = [
        Case("trailing slash", 404, target=f"{PATH}/"),
        Case("dot segment", 404, target="/t/acme/./mcp"),
        Case("dot-dot segment", 404, target="/t/x/../acme/mcp"),
        Case("encoded tenant", 404, target="/t/ac%6De/mcp"),
        Case("encoded mount", 404, target="/t/acme/%6Dcp"),
        Case("double slash", 404, target="//t/acme/mcp"),
        Case("unknown tenant", 404, target="/t/nobody/mcp"),
        Case("uppercase tenant", 404, target="/t/ACME/mcp"),
        Case("query string", 400, target=f"{PATH}?a=1"),
        Case("token in query", 400, target=f"{PATH}?access_token=x"),
        Case("absolute form", 400, target="http://127.0.0.1/t/acme/mcp"),
        Case("encoded slash", 404, target="/t/acme%2Fmcp"),
    ]
    methods = [
        Case(f"method {m}", 405, body=b"", expect_headers={"Allow": "POST"}, method=m)
        for m in ("GET", "DELETE", "PUT", "PATCH", "OPTIONS")
    ]
    hosts = [
        Case("foreign host", 400, host="evil.example"),
        Case("foreign host with port", 400, host="evil.example:80"),
        Case("host with userinfo", 400, host="user@127.0.0.1"),
    ]
    origins = [
        Case("foreign origin", 403, -32600, headers=(("Origin", "https://evil"),)),
        Case("null origin", 403, -32600, headers=(("Origin", "null"),)),
        Case(
            "lookalike origin",
            403,
            -32600,
            headers=(("Origin", "http://127.0.0.1.evil"),),
        ),
    ]
    auth = [
        Case("no credentials", 401, -32600),
        Case("basic scheme", 401, -32600, auth="Basic YWxpY2U6eA=="),
        Case("bearer without token", 401, -32600, auth="Bearer"),
        Case("malformed token", 401, -32600, auth="Bearer not-a-token"),
        Case("unknown prefix", 401, -32600, auth="Bearer mcpgw_000000000000_x"),
        Case("token with spaces", 401, -32600, auth="Bearer a b"),
        Case(
            "two authorization headers",
            400,
            -32600,
            headers=(("Authorization", "Bearer x"),),
        ),
    ]
    auth = [
        c
        if c.auth != "good" or c.status != 401
        else Case(c.name, 401, -32600, auth=None)
        for c in auth
    ]
    media = [
        Case("no content type", 415, -32600, content_type=None),
        Case("text/plain", 415, -32600, content_type="text/plain"),
        Case(
            "latin-1 charset",
            415,
            -32600,
            content_type="application/json; charset=latin-1",
        ),
        Case("json lookalike", 415, -32600, content_type="application/jsonx"),
        Case(
            "two content types",
            415,
            -32600,
            content_type="application/json, text/plain",
        ),
        Case(
            "form encoded",
            415,
            -32600,
            content_type="application/x-www-form-urlencoded",
        ),
        Case("accept html", 406, -32600, headers=(("Accept", "text/html"),)),
        Case("accept xml", 406, -32600, headers=(("Accept", "application/xml"),)),
        Case(
            "accept json q=0",
            406,
            -32600,
            headers=(("Accept", "application/json;q=0"),),
        ),
    ]
    sizes = [
        Case(
            "declared over the limit",
            413,
            -32600,
            headers=(("Content-Length", "1048577"),),
        ),
    ]
    encodings = [
        Case(
            "invalid utf-8",
            400,
            -32700,
            body=b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
        ),
        Case("utf-16", 400, -32700, body=CALL.decode().encode("utf-16")),
        Case("utf-8 bom", 400, -32700, body=b"\xef\xbb\xbf" + CALL),
        Case("overlong utf-8", 400, -32700, body=b'{"a":"\xc0\xaf"}'),
        Case(
            "lone surrogate",
            400,
            -32700,
            body=b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}',
        ),
        Case("nul byte", 400, -32700, body=b"\x00" + CALL),
    ]
    shapes = [
        Case("empty body", 400, -32700, body=b""),
        Case("not json", 400, -32700, body=b"hello"),
        Case("truncated", 400, -32700, body=CALL[:-3]),
        Case("trailing garbage", 400, -32700, body=CALL + b"x"),
        Case("nan", 400, -32700, body=b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}'),
        Case(
            "infinity",
            400,
            -32700,
            body=b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":-Infinity}}',
        ),
        Case(
            "duplicate keys",
            400,
            -32700,
            body=b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}',
        ),
        Case(
            "too deep",
            400,
            -32700,
            body=b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":'
            + b"[" * 70
            + b"]" * 70
            + b"}}",
        ),
        Case("empty batch", 400, -32600, body=b"[]"),
        Case("batch", 400, -32600, body=b"[" + CALL + b"]"),
        Case("string", 400, -32600, body=b'"tools/call"'),
        Case("number", 400, -32600, body=b"42"),
        Case("null", 400, -32600, body=b"null"),
        Case(
            "jsonrpc 1.0",
            400,
            -32600,
            body=b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
            id=1,
        ),
        Case("no jsonrpc", 400, -32600, body=b'{"id":1,"method":"ping"}', id=1),
        Case(
            "method not a string",
            400,
            -32600,
            body=b'{"jsonrpc":"2.0","id":1,"method":5}',
            id=1,
        ),
        Case(
            "params a string",
            400,
            -32600,
            body=b'{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}',
            id=1,
        ),
        Case("id null", 400, -32600, body=rpc("ping", id=None)),
        Case("id true", 400, -32600, body=rpc("ping", id=True)),
        Case("id fraction", 400, -32600, body=rpc("ping", id=1.5)),
        Case("id object", 400, -32600, body=rpc("ping", id={"a": 1})),
        Case("id array", 400, -32600, body=rpc("ping", id=[1])),
        # An answer to a question nobody asked: accepted, and dropped.
        Case("a response", 202, body=b'{"jsonrpc":"2.0","id":1,"result":{}}'),
        Case(
            "an error response",
            202,
            body=b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}',
        ),
        Case(
            "a response without a token",
            401,
            body=b'{"jsonrpc":"2.0","id":1,"result":{}}',
            auth=None,
        ),
        Case(
            "a response to an unissued question",
            202,
            body=b'{"jsonrpc":"2.0","id":"mcpgw-' + b"A" * 32 + b'","result":{}}',
        ),
        Case(
            "result and method",
            400,
            -32600,
            body=b'{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}',
            id=1,
        ),
        Case(
            "notification of a call",
            202,
            body=rpc(params={"name": "test_probe"}, id=NO_ID),
        ),
        Case(
            "cancel notification",
            202,
            body=rpc("notifications/cancelled", {"requestId": 1}, id=NO_ID),
        ),
    ]
    versions = [
        Case(
            "old protocol version",
            400,
            -32600,
            headers=(("MCP-Protocol-Version", "2024-11-05"),),
            id=7,
        ),
        Case(
            "garbage protocol version",
            400,
            -32600,
            headers=(("MCP-Protocol-Version", "x"),),
            id=7,
        ),
        Case(
            "two protocol versions",
            400,
            -32600,
            headers=(
                ("MCP-Protocol-Version", "2025-06-18"),
                ("MCP-Protocol-Version", "2025-11-25"),
            ),
            id=7,
        ),
    ]
    tools = [
        Case("unknown method", 200, -32601, body=rpc("tools/destroy", {}), id=7),
        Case("resources/list", 200, -32601, body=rpc("resources/list", {}), id=7),
        Case("unknown tool", 200, -32602, body=call("nope"), id=7, audited=1),
        Case("empty tool name", 200, -32602, body=call(""), id=7, audited=1),
        Case(
            "path-like tool name",
            200,
            -32602,
            body=call("../test_probe"),
            id=7,
            audited=1,
        ),
        Case(
            "engine id as tool name",
            200,
            -32602,
            body=call("test.probe"),
            id=7,
            audited=1,
        ),
        Case(
            "case-changed tool name",
            200,
            -32602,
            body=call("TEST_PROBE"),
            id=7,
            audited=1,
        ),
        Case("huge tool name", 200, -32602, body=call("x" * 5000), id=7, audited=1),
        Case("numeric tool name", 200, -32602, body=call(5), id=7, audited=1),
        Case("null tool name", 200, -32602, body=call(None), id=7, audited=1),
        Case(
            "missing tool name",
            200,
            -32602,
            body=rpc(params={"arguments": {}}),
            id=7,
            audited=1,
        ),
        Case("no params", 200, -32602, body=rpc(), id=7, audited=1),
        Case("array params", 200, -32602, body=rpc(params=[1]), id=7, audited=1),
        Case(
            "arguments a string", 200, -32602, body=call(arguments="x"), id=7, audited=1
        ),
        Case(
            "arguments a list", 200, -32602, body=call(arguments=[1]), id=7, audited=1
        ),
        Case(
            "unexpected argument",
            200,
            body=call(arguments={"x": 1}),
            audited=1,
            result_error=True,
        ),
        Case(
            "proto pollution",
            200,
            body=call(arguments={"__proto__": {"a": 1}}),
            audited=1,
            result_error=True,
        ),
        Case(
            "huge argument",
            200,
            body=call(arguments={"x": "y" * 500_000}),
            audited=1,
            result_error=True,
        ),
        Case(
            "string id unknown tool",
            200,
            -32602,
            body=rpc(params={"name": "nope"}, id="a\u0000b"),
            id="a\u0000b",
            audited=1,
        ),
    ]
    framing = [
        Case(
            "http/1.1 without host",
            400,
            -32600,
            raw=raw(*AUTH_LINES, f"Content-Length: {len(CALL)}", body=CALL),
        ),
        Case("chunk size -1", 400, raw=chunked(b"-1"), by_server=True),
        Case("chunk size 0xZZ", 400, raw=chunked(b"0xZZ"), by_server=True),
        Case("chunk size not hex", 400, raw=chunked(b"zz"), by_server=True),
        Case(
            "content-length and transfer-encoding",
            400,
            raw=raw(
                "Host: {host}",
                *AUTH_LINES,
                f"Content-Length: {len(CALL) + 9}",
                "Transfer-Encoding: chunked",
                body=b"%x\r\n%s\r\n0\r\n\r\n" % (len(CALL), CALL),
            ),
            by_server=True,
        ),
        Case(
            "obs-fold header",
            400,
            raw=raw(
                "Host: {host}",
                *AUTH_LINES,
                "X-Folded: a",
                " b",
                f"Content-Length: {len(CALL)}",
                body=CALL,
            ),
            by_server=True,
        ),
    ]
    numbers = [
        Case(
            f"overflowing number {text}",
            400,
            -32700,
            body=b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":'
            b'{"name":"test_probe","arguments":{"x":' + text.encode() + b"}}}",
        )
        for text in ("1e999", "-1e999", "1E400", "123.5e+9999", "[1e999]")
    ]
    return [
        *bad_path, *methods, *hosts, *origins, *auth, *media, *sizes,
        *encodings, *shapes, *versions, *tools, *framing, *numbers,
    ]  # fmt: skip


CASES = cases()


def test_the_suite_has_at_least_80_cases():
    assert len(CASES) >= 80
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.fixture
def secret(server: Server) -> str:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    Tenant.objects.create(slug="other", name="Other")
    user = User.objects.create_user("alice")
    bookkeeping.expose(tenant, "test.probe")
    issued = tokens.issue(tenant, user)
    ApiToken.objects.update(last_used_at=timezone.now())
    server.probe_file.unlink(missing_ok=True)
    return issued.secret


def snapshot() -> dict[str, Any]:
    """Every row the gateway could write, but the audit of calls."""
    return {
        "tenants": list(Tenant.objects.values_list("slug", "catalog_version")),
        "exposures": list(Exposure.objects.values_list("pk", flat=True)),
        "events": ExposureEvent.objects.count(),
        "members": Membership.objects.count(),
        "tokens": list(
            ApiToken.objects.values_list("pk", "last_used_at", "revoked_at")
        ),
        "users": list(User.objects.values_list("pk", "last_login")),
    }


def send(server: Server, secret: str, case: Case) -> rawhttp.RawResponse:
    if case.raw is not None:
        data = case.raw.replace(b"{secret}", secret.encode())
        data = data.replace(b"{host}", f"127.0.0.1:{server.port}".encode())
        return rawhttp.send(server.host, server.port, data)
    headers: list[tuple[str, str]] = []
    if case.auth == "good" or case.name == "two authorization headers":
        headers.append(("Authorization", f"Bearer {secret}"))
    elif case.auth is not None:
        headers.append(("Authorization", case.auth))
    if case.content_type is not None:
        headers.append(("Content-Type", case.content_type))
    headers += case.headers
    declared = any(k.lower() == "content-length" for k, _ in case.headers)
    data = rawhttp.request(
        case.method,
        case.target,
        host=case.host or f"127.0.0.1:{server.port}",
        body=case.body,
        headers=headers,
        content_length=not declared,
    )
    return rawhttp.send(server.host, server.port, data)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_hostile_request_is_answered_exactly_and_runs_nothing(server, secret, case):
    if server.kind == "uvicorn" and case.target.startswith("http") and HTTPTOOLS:
        pytest.skip(
            "uvicorn's httptools parser (the asgi extra) hands the app only the "
            "path of an absolute-form target, as RFC 9112 lets a server accept it"
        )
    before = snapshot()

    response = send(server, secret, case)

    assert response.status == case.status, response.body[:300]
    for name, value in case.expect_headers.items():
        assert response.header(name) == value
    assert response.header("Mcp-Session-Id") is None
    assert b"Traceback" not in response.body
    assert secret.encode() not in response.body
    if case.by_server and response.header("Content-Type") == "application/json":
        assert response.json()["error"]["code"] == -32600  # Django saw it
    if case.code is not None:
        body = response.json()
        assert body["error"]["code"] == case.code
        if case.id is NO_ID:
            assert "id" not in body
        else:
            assert body["id"] == case.id
    if case.result_error:
        assert response.json()["result"]["isError"] is True
    if case.status == 401:
        assert (response.header("WWW-Authenticate") or "").startswith("Bearer ")
    assert server.engine_runs() == []
    assert snapshot() == before
    assert ToolCall.objects.count() == case.audited


# -- The management API, over the same sockets -----------------------------------


@pytest.fixture
def api_key(server: Server) -> str:
    root = User.objects.create_superuser("root")
    return str(Token.objects.create(user=root).key)


def api_post(server: Server, key: str, body: bytes, host: bool = True) -> bytes:
    lines = ["POST /api/tenants/ HTTP/1.1"]
    if host:
        lines.append(f"Host: 127.0.0.1:{server.port}")
    lines += [
        f"Authorization: Token {key}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def test_api_json_nested_5000_deep_is_400_in_the_api_shape(server, api_key):
    body = b'{"slug": "deep", "name": "Deep", "engine_config": {"a": '
    body += b"[" * 5000 + b"]" * 5000 + b"}}"

    response = rawhttp.send(server.host, server.port, api_post(server, api_key, body))

    assert response.status == 400, response.body[:300]
    assert response.json()["code"] == "parse_error"
    assert not Tenant.objects.exists()


def test_an_api_request_without_host_is_400_in_the_api_shape(server, api_key):
    body = b'{"slug": "hostless", "name": "Hostless"}'
    data = api_post(server, api_key, body, host=False)

    response = rawhttp.send(server.host, server.port, data)

    assert response.status == 400, response.body[:300]
    assert response.json()["code"] == "invalid"
    assert not Tenant.objects.exists()
