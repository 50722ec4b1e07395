"""Hostile identity providers and a dead cache, against live servers.

The gateway runs under gunicorn and uvicorn with a 2 s fetch deadline and a
4 KiB body cap; the providers are ``tests.live.idp`` servers on loopback.
Each case asserts the answer (a JSON 503 in the endpoint's shape) and how
often the provider was reached, never how long anything took.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.db import connection

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.models import AuthorizationServer, Membership, Tenant
from tests.live import idp as fake_idp
from tests.live import rawhttp
from tests.live.servers import Server, database_url, free_port, running
from tests.oauth_keys import claims, mint, new_key

pytestmark = pytest.mark.django_db(transaction=True)

KEY = new_key()


def start(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    **env: str,
) -> Iterator[Server]:
    port = free_port()
    tmp = tmp_path_factory.mktemp(f"providers-{request.param}")
    with running(
        request.param,
        database_url(connection.settings_dict),
        tmp,
        port=port,
        MCPGW_TEST_PUBLIC_BASE_URL=f"http://127.0.0.1:{port}",
        MCP_JWKS_TIMEOUT_SECONDS="2",
        MCP_OAUTH_MAX_RESPONSE_BYTES="4096",
        **env,
    ) as live:
        yield live


@pytest.fixture(scope="module", params=["gunicorn", "uvicorn"])
def gateway(request, django_db_setup, tmp_path_factory) -> Iterator[Server]:
    yield from start(request, tmp_path_factory)


@pytest.fixture(scope="module", params=["gunicorn", "uvicorn"])
def strict_gateway(request, django_db_setup, tmp_path_factory) -> Iterator[Server]:
    """ALLOW_INSECURE_LOOPBACK_ISSUERS off, as in production."""
    yield from start(request, tmp_path_factory, MCPGW_TEST_LOOPBACK_ISSUERS="0")


@pytest.fixture(scope="module", params=["gunicorn", "uvicorn"])
def cacheless_gateway(request, django_db_setup, tmp_path_factory) -> Iterator[Server]:
    """The shared cache is a Redis that is not there."""
    dead = f"redis://127.0.0.1:{free_port()}/0"
    yield from start(request, tmp_path_factory, CACHE_URL=dead)


def trusting(issuer: str, slug: str = "acme") -> Tenant:
    """A tenant whose one member alice may use JWTs of ``issuer``."""
    tenant = Tenant.objects.create(slug=slug, name=slug.title())
    alice, _ = User.objects.get_or_create(username="alice")
    Membership.objects.create(tenant=tenant, user=alice)
    bookkeeping.expose(tenant, "test.probe")
    AuthorizationServer.objects.create(
        tenant=tenant, issuer=issuer, jwks_uri=f"{issuer}/jwks", user_claim="sub"
    )
    return tenant


def jwt_for(server: Server, issuer: str, slug: str = "acme") -> str:
    return mint(KEY, "k1", claims(issuer, f"{server.url}/t/{slug}/mcp", "alice"))


def call(server: Server, slug: str, credential: str) -> rawhttp.RawResponse:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "test_probe", "arguments": {}},
        }
    ).encode()
    data = rawhttp.request(
        "POST",
        f"/t/{slug}/mcp",
        host=f"127.0.0.1:{server.port}",
        body=body,
        headers=[
            ("Authorization", f"Bearer {credential}"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
    )
    return rawhttp.send(server.host, server.port, data, timeout=30)


def assert_json_503(response: rawhttp.RawResponse) -> None:
    assert response.status == 503, response.body[:300]
    assert response.header("Content-Type") == "application/json"
    assert response.json()["error"]["code"] == -32000
    assert b"Traceback" not in response.body


def test_a_burst_naming_a_hung_provider_fetches_once_and_others_are_served(gateway):
    with fake_idp.running(mode="hang") as hung:
        trusting(hung.url)
        other = Tenant.objects.create(slug="other", name="Other")
        bookkeeping.expose(other, "test.probe")
        secret = tokens.issue(other, User.objects.create_user("bob")).secret
        token = jwt_for(gateway, hung.url)
        done: list[tuple[str, int]] = []

        def send(label: str, slug: str, credential: str) -> None:
            response = call(gateway, slug, credential)
            done.append((label, response.status))
            if label != "other":
                assert_json_503(response)

        probe = threading.Thread(target=send, args=("probe", "acme", token))
        probe.start()
        while hung.connections == 0 and probe.is_alive():
            time.sleep(0.01)
        burst = [
            threading.Thread(target=send, args=(f"jwt{i}", "acme", token))
            for i in range(5)
        ]
        burst.append(threading.Thread(target=send, args=("other", "other", secret)))
        for thread in burst:
            thread.start()
        for thread in [probe, *burst]:
            thread.join()

    assert hung.connections == 1
    assert ("other", 200) in done
    assert done[-1] == ("probe", 503)  # everyone else was answered first
    assert sorted(status for _, status in done) == [200] + [503] * 6


@pytest.mark.parametrize(
    "options",
    [{"mode": "big", "big_bytes": 100_000}, {"mode": "drip", "drip_seconds": 0.3}],
    ids=["oversized key set", "slow-drip key set"],
)
def test_a_provider_answering_too_much_or_too_slowly_is_a_503(gateway, options):
    with fake_idp.running(**options) as server:
        server.document = {"keys": []}
        trusting(server.url)

        response = call(gateway, "acme", jwt_for(gateway, server.url))

    assert_json_503(response)


def test_a_provider_on_loopback_is_refused_without_connecting(strict_gateway):
    with fake_idp.running() as server:
        issuer = f"http://localhost:{server.port}"
        trusting(issuer)  # saved before the rules, or by code

        response = call(strict_gateway, "acme", jwt_for(strict_gateway, issuer))

        assert server.connections == 0
    assert_json_503(response)


def test_with_the_cache_down_an_oauth_request_is_a_json_503(cacheless_gateway):
    trusting("https://idp.invalid")

    response = call(
        cacheless_gateway, "acme", jwt_for(cacheless_gateway, "https://idp.invalid")
    )

    assert_json_503(response)


def test_with_the_cache_down_an_api_token_still_works(cacheless_gateway):
    tenant = trusting("https://idp.invalid")
    secret = tokens.issue(tenant, User.objects.get(username="alice")).secret

    response = call(cacheless_gateway, "acme", secret)

    assert response.status == 200, response.body[:300]
    assert "result" in response.json()
