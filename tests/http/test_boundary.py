"""Every boundary rule, as raw bytes over a real socket, under both servers.

Each refused request would call the probe tool if it got through, so an
empty probe file proves that no engine ran.
"""

from __future__ import annotations

import importlib.util
import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import ApiToken, Membership, Tenant
from tests.live import rawhttp
from tests.live.servers import Server

HTTPTOOLS = importlib.util.find_spec("httptools") is not None

pytestmark = pytest.mark.django_db(transaction=True)

CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "test_probe", "arguments": {}},
}
CALL_BYTES = json.dumps(CALL).encode()
PATH = "/t/acme/mcp"


@pytest.fixture
def secret(server: Server) -> str:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    user = User.objects.create_user("alice")
    bookkeeping.expose(tenant, "test.probe")
    secret = tokens.issue(tenant, user).secret
    server.probe_file.unlink(missing_ok=True)
    return secret


def post(
    server: Server,
    secret: str | None,
    *,
    body: bytes = CALL_BYTES,
    target: str = PATH,
    headers: list[tuple[str, str]] | None = None,
    host: str | None = None,
    method: str = "POST",
    content_type: str | None = "application/json",
) -> rawhttp.RawResponse:
    sent: list[tuple[str, str]] = []
    if secret is not None:
        sent.append(("Authorization", f"Bearer {secret}"))
    if content_type is not None:
        sent.append(("Content-Type", content_type))
    sent += headers or []
    data = rawhttp.request(
        method, target, host=host or f"127.0.0.1:{server.port}", body=body, headers=sent
    )
    return rawhttp.send(server.host, server.port, data)


def assert_refused(
    server: Server, response: rawhttp.RawResponse, status: int, code: int | None = None
) -> dict[str, Any] | None:
    assert response.status == status, response.body
    assert server.engine_runs() == []
    assert response.header("Mcp-Session-Id") is None
    if code is None:
        return None
    body = response.json()
    assert body["error"]["code"] == code
    assert "Traceback" not in response.body.decode()
    return dict(body)


def test_an_admitted_call_runs_the_engine_once(server, secret):
    response = post(server, secret, headers=[("Accept", "application/json")])

    assert response.status == 200
    assert response.json()["id"] == 7
    assert response.json()["result"]["structuredContent"] == {"ran": True}
    assert server.engine_runs() == ["acme"]


def test_a_host_outside_allowed_hosts_is_a_400(server, secret):
    response = post(server, secret, host="evil.example")

    assert_refused(server, response, 400)


def test_a_foreign_origin_is_a_403_without_id(server, secret):
    response = post(server, secret, headers=[("Origin", "https://evil.example")])

    body = assert_refused(server, response, 403, -32600)
    assert body is not None
    assert "id" not in body


def test_the_servers_own_origin_is_allowed(server, secret):
    response = post(server, secret, headers=[("Origin", server.url)])

    assert response.status == 200


def test_a_tenants_allowed_origin_is_allowed(server, secret):
    Tenant.objects.filter(slug="acme").update(allowed_origins=["https://app.example"])

    response = post(server, secret, headers=[("Origin", "https://app.example")])

    assert response.status == 200


@pytest.mark.parametrize(
    "target", [f"{PATH}?x=1", f"{PATH}?", "http://127.0.0.1/t/acme/mcp"]
)
def test_a_query_or_absolute_target_is_a_400(server, secret, target):
    if server.kind == "uvicorn" and target.endswith("?"):
        pytest.skip("uvicorn drops an empty query: the target reaches the app bare")
    if server.kind == "uvicorn" and target.startswith("http") and HTTPTOOLS:
        pytest.skip(
            "uvicorn's httptools parser (the asgi extra) hands the app only the "
            "path of an absolute-form target, as RFC 9112 lets a server accept it"
        )

    response = post(server, secret, target=target)

    assert_refused(server, response, 400)


@pytest.mark.parametrize(
    "target",
    [f"{PATH}/", "/t/acme/./mcp", "/t/ac%6De/mcp", "/t/acme/%6Dcp", "//t/acme/mcp"],
)
def test_a_non_canonical_path_is_a_404(server, secret, target):
    response = post(server, secret, target=target)

    assert_refused(server, response, 404)


def test_an_unknown_tenant_is_a_404(server, secret):
    response = post(server, secret, target="/t/nobody/mcp")

    assert_refused(server, response, 404)


def test_a_disabled_tenant_is_a_404(server, secret):
    Tenant.objects.filter(slug="acme").update(is_active=False)

    response = post(server, secret)

    assert_refused(server, response, 404)


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
def test_other_methods_are_a_405_with_allow_post(server, secret, method):
    response = post(server, secret, method=method, body=b"")

    assert_refused(server, response, 405)
    assert response.header("Allow") == "POST"


def test_a_declared_length_over_the_limit_is_a_413(server, secret):
    data = rawhttp.request(
        "POST",
        PATH,
        host=f"127.0.0.1:{server.port}",
        headers=[
            ("Authorization", f"Bearer {secret}"),
            ("Content-Type", "application/json"),
            ("Content-Length", "1048577"),
        ],
    )

    response = rawhttp.send(server.host, server.port, data + CALL_BYTES)

    assert_refused(server, response, 413)


def test_a_body_at_the_limit_is_read(server, secret):
    padding = b" " * (1_048_576 - len(CALL_BYTES))

    response = post(server, secret, body=CALL_BYTES + padding)

    assert response.status == 200


def test_a_chunked_body_over_the_limit_is_a_413(server, secret):
    body = CALL_BYTES + b" " * 1_048_576
    chunks = b"".join(
        f"{len(part):x}\r\n".encode() + part + b"\r\n"
        for part in (body[i : i + 65536] for i in range(0, len(body), 65536))
    )
    data = rawhttp.request(
        "POST",
        PATH,
        host=f"127.0.0.1:{server.port}",
        headers=[
            ("Authorization", f"Bearer {secret}"),
            ("Content-Type", "application/json"),
            ("Transfer-Encoding", "chunked"),
        ],
    )

    response = rawhttp.send(server.host, server.port, data + chunks + b"0\r\n\r\n")

    assert_refused(server, response, 413)


def test_two_authorization_headers_are_a_400(server, secret):
    response = post(server, secret, headers=[("Authorization", f"Bearer {secret}")])

    assert_refused(server, response, 400)


@pytest.mark.parametrize("authorization", [None, "Basic YWxpY2U6cHc=", "Bearer"])
def test_missing_credentials_are_a_401_without_error(server, secret, authorization):
    headers = [("Authorization", authorization)] if authorization else []

    response = post(server, None, headers=headers)

    assert_refused(server, response, 401)
    challenge = response.header("WWW-Authenticate") or ""
    assert challenge.startswith("Bearer realm=")
    assert "error=" not in challenge


def test_a_session_cookie_never_authenticates(server, secret):
    response = post(server, None, headers=[("Cookie", "sessionid=abc; csrftoken=x")])

    assert_refused(server, response, 401)


def _other_tenants_token() -> str:
    other = Tenant.objects.create(slug="globex", name="Globex")
    return tokens.issue(other, User.objects.create_user("bob")).secret


def _revoked(secret: str) -> str:
    tokens.revoke(secret)
    return secret


def _expired(secret: str) -> str:
    prefix = tokens.split(secret)
    assert prefix is not None
    ApiToken.objects.filter(prefix=prefix[0]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    return secret


def _non_member(secret: str) -> str:
    Membership.objects.all().delete()
    return secret


@pytest.mark.parametrize(
    "make_token",
    [
        lambda secret: secret[:-2] + "xx",
        lambda secret: "mcpgw_nothing_here",
        lambda secret: _other_tenants_token(),
        _revoked,
        _expired,
        _non_member,
    ],
    ids=["wrong-secret", "unknown", "other-tenant", "revoked", "expired", "non-member"],
)
def test_a_bad_token_is_a_401_invalid_token(server, secret, make_token):
    response = post(server, make_token(secret))

    assert_refused(server, response, 401)
    assert 'error="invalid_token"' in (response.header("WWW-Authenticate") or "")


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/json-seq", "application/json; charset=latin-1"],
)
def test_a_non_json_content_type_is_a_415(server, secret, content_type):
    response = post(server, secret, content_type=content_type)

    assert_refused(server, response, 415)


def test_two_content_types_are_refused(server, secret):
    response = post(server, secret, headers=[("Content-Type", "application/json")])

    # gunicorn itself refuses a repeated Content-Type with 400 before Django
    assert_refused(server, response, 400 if server.kind == "gunicorn" else 415)


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-8", "Application/JSON; Charset=UTF-8"],
)
def test_json_with_utf8_charset_is_accepted(server, secret, content_type):
    response = post(server, secret, content_type=content_type)

    assert response.status == 200


@pytest.mark.parametrize(
    "accept", ["text/html", "text/event-stream", "application/json;q=0"]
)
def test_an_accept_without_json_is_a_406(server, secret, accept):
    response = post(server, secret, headers=[("Accept", accept)])

    assert_refused(server, response, 406)


@pytest.mark.parametrize(
    "accept", ["application/json, text/event-stream", "*/*", "application/*;q=0.5"]
)
def test_an_accept_admitting_json_is_served(server, secret, accept):
    response = post(server, secret, headers=[("Accept", accept)])

    assert response.status == 200


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","x":"\xc3\x28"}',
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","x":"\\ud800"}',
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","x":NaN}',
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","x":-Infinity}',
        b'{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/call"}',
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","x":'
        + b"[" * 70
        + b"]" * 70
        + b"}",
        b'{"jsonrpc":"2.0",',
        b"",
        b"\xef\xbb\xbf" + CALL_BYTES,
    ],
    ids=[
        "bad-utf8",
        "lone-surrogate",
        "nan",
        "infinity",
        "dup-key",
        "deep",
        "cut",
        "empty",
        "bom",
    ],
)
def test_unparsable_bodies_are_a_400_parse_error_without_id(server, secret, body):
    response = post(server, secret, body=body)

    parsed = assert_refused(server, response, 400, -32700)
    assert parsed is not None
    assert "id" not in parsed


@pytest.mark.parametrize(
    ("body", "echoed"),
    [
        (b"[" + CALL_BYTES + b"]", None),
        (b'"tools/call"', None),
        (b'{"jsonrpc":"2.0","id":null,"method":"tools/call"}', None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/call"}', None),
        (b'{"jsonrpc":"2.0","id":true,"method":"tools/call"}', None),
        (b'{"jsonrpc":"1.0","id":7,"method":"tools/call"}', 7),
        (b'{"id":"x","method":"tools/call"}', "x"),
        (b'{"jsonrpc":"2.0","id":7,"method":5}', 7),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}', 7),
    ],
)
def test_a_body_that_is_not_one_request_is_a_400_invalid_request(
    server, secret, body, echoed
):
    response = post(server, secret, body=body)

    parsed = assert_refused(server, response, 400, -32600)
    assert parsed is not None
    assert parsed.get("id") == echoed
    assert ("id" in parsed) == (echoed is not None)


@pytest.mark.parametrize(
    "body",
    [b'{"jsonrpc":"2.0","id":7,"result":{}}', b'{"jsonrpc":"2.0","id":7,"error":{}}'],
)
def test_a_posted_response_is_a_202_with_an_empty_body(server, secret, body):
    response = post(server, secret, body=body)

    assert_refused(server, response, 202)
    assert response.body == b""


def test_a_notification_is_a_202_with_an_empty_body(server, secret):
    body = b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"test_probe"}}'

    response = post(server, secret, body=body)

    assert_refused(server, response, 202)
    assert response.body == b""


@pytest.mark.parametrize("version", ["2099-01-01", "2024-11-05", "garbage"])
def test_an_unsupported_protocol_version_is_a_400(server, secret, version):
    response = post(server, secret, headers=[("MCP-Protocol-Version", version)])

    body = assert_refused(server, response, 400, -32600)
    assert body is not None


def test_a_client_session_id_is_ignored(server, secret):
    response = post(server, secret, headers=[("Mcp-Session-Id", "deadbeef")])

    assert response.status == 200
    assert response.header("Mcp-Session-Id") is None


def test_request_ids_keep_their_type_and_value(server, secret):
    for request_id in (0, "", "1", 9007199254740993):
        body = json.dumps({**CALL, "id": request_id}).encode()

        response = post(server, secret, body=body)

        assert response.status == 200
        assert response.json()["id"] == request_id
        assert type(response.json()["id"]) is type(request_id)


@pytest.mark.parametrize("method", ["tools/list", "tools/call"])
def test_a_token_of_tenant_a_reaches_nothing_of_tenant_b(server, secret, method):
    other = Tenant.objects.create(slug="globex", name="Globex")
    bookkeeping.expose(other, "test.probe")
    body = json.dumps({**CALL, "method": method}).encode()

    response = post(server, secret, body=body, target="/t/globex/mcp")

    assert_refused(server, response, 401)
    assert b"test_probe" not in response.body
