"""Identity-provider fetches cannot be turned against the server.

Real HTTP servers on loopback (``tests.live.idp``) play the provider; the
only thing replaced is the resolver where a test needs a name to resolve to
a chosen address.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError

from mcp_gateway.models import AuthorizationServer, Tenant
from mcp_gateway.oauth import config, fetch, jwks, net
from tests.live import idp as fake_idp
from tests.oauth_keys import new_key, public_jwk

KEYS = {"keys": [public_jwk(new_key(), "k1")]}


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def strict(settings: Any) -> None:
    """The production rule: no loopback issuers."""
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "ALLOW_INSECURE_LOOPBACK_ISSUERS": False,
    }


def configure(settings: Any, **values: Any) -> None:
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, **values}


def resolving(monkeypatch: pytest.MonkeyPatch, *answers: str) -> list[str]:
    """Make every name resolve to the next of ``answers`` (the last repeats)."""
    asked: list[str] = []

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_address(host):
            address = host  # as the real resolver: a literal is itself
        else:
            asked.append(host)
            address = answers[min(len(asked), len(answers)) - 1]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


# -- Which hosts are refused ------------------------------------------------------

REFUSED = [
    "https://169.254.169.254/latest/meta-data",
    "https://10.0.0.5/jwks",
    "https://172.16.0.1/",
    "https://192.168.1.1/",
    "https://127.0.0.1/",
    "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://[::ffff:10.0.0.5]/",
    "https://[::ffff:169.254.169.254]/",
    "https://[64:ff9b::a00:5]/",
    "https://0.0.0.0/",
    "https://[::]/",
    "https://224.0.0.1/",
    "https://240.0.0.1/",
    "https://100.64.0.1/",
    "https://[fc00::1]/",
    "https://[fe80::1]/",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://metadata.goog/",
    "https://metadata/",
    "https://instance-data/",
    "https://METADATA.google.internal./",
    "https://localhost/",
]


@pytest.mark.parametrize("url", REFUSED)
def test_private_loopback_and_metadata_hosts_are_refused(strict, url):
    with pytest.raises(net.Refused):
        net.vet(url)


def test_a_name_resolving_to_a_private_address_is_refused(strict, monkeypatch):
    resolving(monkeypatch, "10.1.2.3")

    with pytest.raises(net.Refused, match=r"10\.1\.2\.3"):
        net.vet("https://keycloak.corp.example/realms/x")


def test_a_name_with_any_private_address_is_refused(strict, monkeypatch):
    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.5", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    with pytest.raises(net.Refused):
        net.vet("https://idp.example.com/")


def test_a_public_address_is_fetchable(strict, monkeypatch):
    resolving(monkeypatch, "93.184.215.14")

    target = net.vet("https://idp.example.com:8443/jwks?x=1")

    assert target.addresses == ("93.184.215.14",)
    assert (target.host, target.port, target.target) == (
        "idp.example.com",
        8443,
        "/jwks?x=1",
    )


@pytest.mark.parametrize(
    ("allowed", "url"),
    [
        (["10.0.0.0/8"], "https://10.0.0.5/"),
        (["10.0.0.5"], "https://10.0.0.5/"),
        (["keycloak.corp.example"], "https://keycloak.corp.example/"),
        (["fd00::/8"], "https://[fd00::1]/"),
    ],
)
def test_the_allow_list_admits_named_hosts_and_networks(
    settings, strict, monkeypatch, allowed, url
):
    resolving(monkeypatch, "10.0.0.5")
    configure(settings, OAUTH_ALLOWED_PRIVATE_HOSTS=allowed)

    assert net.vet(url).addresses


def test_the_allow_list_admits_nothing_else(settings, strict, monkeypatch):
    resolving(monkeypatch, "10.0.0.6")
    configure(settings, OAUTH_ALLOWED_PRIVATE_HOSTS=["10.0.0.5", "other.example"])

    with pytest.raises(net.Refused):
        net.vet("https://keycloak.corp.example/")


def test_the_allow_list_never_admits_a_metadata_name(settings, strict):
    configure(settings, OAUTH_ALLOWED_PRIVATE_HOSTS=["metadata.google.internal"])

    with pytest.raises(net.Refused):
        net.vet("https://metadata.google.internal/")


def test_the_loopback_setting_admits_loopback_only(settings):
    configure(settings, ALLOW_INSECURE_LOOPBACK_ISSUERS=True)

    assert net.vet("http://localhost:9/").addresses
    with pytest.raises(net.Refused):
        net.vet("https://10.0.0.5/")


def test_an_unresolvable_name_is_unresolved_not_refused(strict):
    with pytest.raises(net.Unresolved):
        net.vet("https://idp.invalid/")


# -- Save time -------------------------------------------------------------------


@pytest.mark.parametrize(
    "field",
    ["issuer", "jwks_uri", "introspection_endpoint"],
)
@pytest.mark.parametrize(
    "url",
    [
        "https://169.254.169.254/x",
        "https://10.0.0.5/x",
        "https://metadata.google.internal/x",
        "https://localhost/x",
    ],
)
def test_saving_a_server_on_a_refused_host_is_a_validation_error(
    strict, tenant, field, url
):
    server = AuthorizationServer(
        tenant=tenant,
        issuer="https://idp.invalid",
        kind=AuthorizationServer.Kind.INTROSPECTION,
        introspection_endpoint="https://idp.invalid/introspect",
        client_id="gateway",
        client_secret="secret",
    )
    setattr(server, field, url)

    with pytest.raises(ValidationError) as raised:
        server.full_clean()

    assert field in raised.value.message_dict


def test_an_unresolvable_host_is_accepted_and_named_for_a_warning(strict, tenant):
    server = AuthorizationServer(
        tenant=tenant, issuer="https://idp.invalid", jwks_uri="https://idp.invalid/k"
    )

    server.full_clean()

    assert config.unresolved_hosts([server.issuer, server.jwks_uri]) == ["idp.invalid"]


# -- Fetch time ------------------------------------------------------------------


def test_a_name_resolving_to_loopback_is_never_connected_to(strict):
    with fake_idp.running(document=KEYS) as server:
        with pytest.raises(fetch.AuthUnavailable, match="Refused"):
            fetch.get_json(f"http://localhost:{server.port}/jwks")

        assert server.connections == 0


def test_the_fetch_connects_to_the_vetted_address_with_the_hosts_name(
    settings, monkeypatch
):
    configure(settings, ALLOW_INSECURE_LOOPBACK_ISSUERS=True)
    asked = resolving(monkeypatch, "127.0.0.1", "10.9.9.9")  # then "rebinds"
    with fake_idp.running(document=KEYS) as server:
        document = fetch.get_json(f"http://idp.test:{server.port}/jwks")

    assert document == KEYS
    assert asked == ["idp.test"]  # one lookup: the address connected to
    assert server.hosts == [f"idp.test:{server.port}"]


def test_a_rebound_name_is_refused_at_the_next_fetch(settings, monkeypatch):
    configure(settings, ALLOW_INSECURE_LOOPBACK_ISSUERS=True)
    with fake_idp.running(document=KEYS) as server:
        url = f"http://localhost:{server.port}/jwks"
        resolving(monkeypatch, "127.0.0.1")
        config.validate_server_url(url)  # saved while it resolved well
        resolving(monkeypatch, "169.254.169.254")

        with pytest.raises(fetch.AuthUnavailable, match="link-local"):
            fetch.get_json(url)

        assert server.connections == 0


def test_a_slow_drip_is_cut_off_at_the_whole_calls_deadline(settings):
    configure(settings, JWKS_TIMEOUT_SECONDS=1.0)
    # Each byte comes well within any per-read timeout; the whole answer
    # would take minutes.
    with (
        fake_idp.running(mode="drip", document=KEYS, drip_seconds=0.3) as server,
        pytest.raises(fetch.AuthUnavailable),
    ):
        fetch.get_json(f"{server.url}/jwks")


def test_a_body_over_the_cap_is_a_failure_never_parsed(settings):
    configure(settings, OAUTH_MAX_RESPONSE_BYTES=1000)
    with (
        fake_idp.running(mode="big", big_bytes=5000) as server,
        pytest.raises(fetch.AuthUnavailable, match="over"),
    ):
        fetch.get_json(f"{server.url}/jwks")


def test_a_chunked_body_over_the_cap_is_a_failure(settings):
    configure(settings, OAUTH_MAX_RESPONSE_BYTES=100_000)
    with (
        fake_idp.running(mode="big", big_bytes=1_000_000, chunked=True) as server,
        pytest.raises(fetch.AuthUnavailable, match="over"),
    ):
        fetch.get_json(f"{server.url}/jwks")


def test_the_default_cap_is_256_kib():
    from mcp_gateway.conf import GatewaySettings

    assert GatewaySettings().OAUTH_MAX_RESPONSE_BYTES == 262_144
    assert GatewaySettings().OAUTH_FAILURE_CACHE_SECONDS == 30


def test_a_discovered_jwks_uri_on_a_private_host_is_refused(tenant, settings):
    configure(settings, ALLOW_INSECURE_LOOPBACK_ISSUERS=True)
    with fake_idp.running() as server:
        server.document = {"issuer": server.url, "jwks_uri": "https://10.0.0.5/jwks"}
        issuer = AuthorizationServer.objects.create(tenant=tenant, issuer=server.url)

        with pytest.raises(fetch.AuthUnavailable):
            jwks.find_key(issuer, "k1")

        assert server.connections == 1  # the metadata; never the key set


# -- Failure memory ----------------------------------------------------------------


@pytest.fixture
def hung(tenant: Tenant, settings: Any) -> Iterator[tuple[Any, AuthorizationServer]]:
    configure(settings, ALLOW_INSECURE_LOOPBACK_ISSUERS=True, JWKS_TIMEOUT_SECONDS=0.5)
    with fake_idp.running(mode="hang") as server:
        row = AuthorizationServer.objects.create(
            tenant=tenant, issuer=server.url, jwks_uri=f"{server.url}/jwks"
        )
        yield server, row


def test_a_failed_fetch_is_remembered_and_answered_at_once(hung):
    server, row = hung

    for _ in range(5):
        with pytest.raises(fetch.AuthUnavailable):
            jwks.find_key(row, "k1")

    assert server.connections == 1


def test_a_concurrent_burst_makes_one_fetch(hung):
    server, row = hung
    failures: list[BaseException] = []
    start = threading.Barrier(8)

    def login() -> None:
        start.wait()
        try:
            jwks.find_key(row, "k1")
        except fetch.AuthUnavailable as exc:
            failures.append(exc)

    threads = [threading.Thread(target=login) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(failures) == 8
    assert server.connections == 1


def test_the_memory_expires_after_its_window(hung, settings):
    server, row = hung
    configure(settings, OAUTH_FAILURE_CACHE_SECONDS=0)

    for _ in range(2):
        with pytest.raises(fetch.AuthUnavailable):
            jwks.find_key(row, "k1")

    assert server.connections == 2


def test_another_issuer_is_served_while_one_is_remembered_failing(hung, other_tenant):
    _server, row = hung
    with pytest.raises(fetch.AuthUnavailable):
        jwks.find_key(row, "k1")
    with fake_idp.running(document=KEYS) as good:
        other = AuthorizationServer.objects.create(
            tenant=other_tenant, issuer=good.url, jwks_uri=f"{good.url}/jwks"
        )

        assert jwks.find_key(other, "k1") is not None
