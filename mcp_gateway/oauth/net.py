"""Where the gateway may connect for an identity provider, and how.

Every URL fetched from an authorization server (its metadata, a key set, an
introspection endpoint; configured by staff or discovered in metadata) is
vetted first: its host must not be a cloud metadata name, and it must not
be, or resolve to, an address that is loopback, private, link-local,
multicast, reserved, unspecified or otherwise not global (IPv4, IPv6, and
IPv4 inside IPv6) — unless ``OAUTH_ALLOWED_PRIVATE_HOSTS`` admits it (a host
name, or a network the address is in), or, for loopback only,
``ALLOW_INSECURE_LOOPBACK_ISSUERS`` is on.

The fetch then connects only to the addresses vetted (Host header and TLS
server name stay the URL's host), so a name that resolves elsewhere a
moment later (DNS rebinding) is never connected to. The whole call, from
connect to the last body byte, has one deadline, and a body over the cap is
a failure, never read whole.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore2
import httpx2

from mcp_gateway.conf import gateway_settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
        "metadata.packet.net",
        "metadata.oraclecloud.com",
    }
)
"""Cloud instance-metadata names, refused by name (most resolve only inside
their cloud, so resolving them at save time proves nothing)."""

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
DEFAULT_PORTS = {"http": 80, "https": 443}


class Refused(Exception):
    """A URL the gateway never fetches; the message says why."""


class Unresolved(Exception):
    """A host name that does not resolve (now)."""


@dataclass(frozen=True)
class Target:
    """A vetted URL: where to connect, and what to say there."""

    scheme: str
    host: str
    port: int
    target: str
    addresses: tuple[str, ...]

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port == DEFAULT_PORTS[self.scheme]:
            return host
        return f"{host}:{self.port}"


# -- Vetting -----------------------------------------------------------------


def vet(url: str) -> Target:
    """Resolve ``url``'s host and check every address it resolves to.

    Raises:
        Refused: not http(s), a metadata name, or a refused address.
        Unresolved: the host name does not resolve.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"{url!r} is not a URL") from exc
    host = (parts.hostname or "").rstrip(".").lower()
    if parts.scheme not in DEFAULT_PORTS or not host:
        raise Refused(f"{url!r} is not an http(s) URL")
    port = port or DEFAULT_PORTS[parts.scheme]
    addresses = vet_host(host, port)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, host, port, target, addresses)


def vet_host(host: str, port: int = 443) -> tuple[str, ...]:
    """The addresses of ``host`` when every one of them may be fetched from.

    Raises:
        Refused: a metadata name, or an address the rules refuse.
        Unresolved: the host name does not resolve.
    """
    host = host.rstrip(".").lower()
    if host in METADATA_HOSTS:
        raise Refused(f"{host} is a cloud metadata host")
    addresses = resolve(host, port)
    for address in addresses:
        reason = refusal(host, ipaddress.ip_address(address))
        if reason is not None:
            raise Refused(f"{host} is or resolves to {address} ({reason})")
    return addresses


def resolve(host: str, port: int) -> tuple[str, ...]:
    """The host's addresses (an IP literal is its own), in resolver order.

    Raises:
        Unresolved: the name does not resolve.
    """
    try:
        return (str(ipaddress.ip_address(host)),)
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Unresolved(host) from exc
    addresses = [str(info[4][0]).partition("%")[0] for info in found]
    if not addresses:
        raise Unresolved(host)
    return tuple(dict.fromkeys(addresses))


def refusal(host: str, address: Address) -> str | None:
    """Why ``address`` (of ``host``) may not be fetched from, or ``None``."""
    address = _embedded_ipv4(address) or address
    if _admitted(host, address):
        return None
    if address.is_loopback:
        insecure_ok = gateway_settings().ALLOW_INSECURE_LOOPBACK_ISSUERS
        return None if insecure_ok else "loopback"
    checks = (
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("not global", not address.is_global),
    )
    return next((name for name, hit in checks if hit), None)


def _embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4, Teredo)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def _admitted(host: str, address: Address) -> bool:
    """Whether ``OAUTH_ALLOWED_PRIVATE_HOSTS`` names the host or its network."""
    for entry in gateway_settings().OAUTH_ALLOWED_PRIVATE_HOSTS:
        entry = str(entry).strip().rstrip(".").lower()
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            if entry == host:
                return True
            continue
        if address.version == network.version and address in network:
            return True
    return False


# -- Fetching ----------------------------------------------------------------


class FetchFailed(Exception):
    """No usable answer: refused, unreachable, too slow or too large."""


_FAILURES = (
    httpcore2.TimeoutException,
    httpcore2.NetworkError,
    httpcore2.ProtocolError,
    httpcore2.UnsupportedProtocol,
    httpcore2.ConnectionNotAvailable,
    OSError,
    ValueError,
)


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


def fetch(
    method: str,
    url: str,
    *,
    headers: Iterable[tuple[str, str]] = (),
    content: bytes | None = None,
) -> Answer:
    """Send one request to a vetted address within the deadline and cap.

    ``JWKS_TIMEOUT_SECONDS`` bounds the whole call; a body longer than
    ``OAUTH_MAX_RESPONSE_BYTES`` is a failure.

    Raises:
        FetchFailed: any failure; its message names the URL and the reason.
    """
    settings = gateway_settings()
    deadline = time.monotonic() + settings.JWKS_TIMEOUT_SECONDS
    try:
        target = vet(url)
    except (Refused, Unresolved) as exc:
        raise FetchFailed(f"{method} {url}: {type(exc).__name__} {exc}") from exc
    sent = [("Host", target.authority), *headers]
    try:
        with _pool(target, deadline) as pool:
            return _exchange(pool, method, target, sent, content, deadline)
    except FetchFailed:
        raise
    except _FAILURES as exc:
        raise FetchFailed(f"{method} {url}: {type(exc).__name__}") from exc


@contextlib.contextmanager
def _pool(target: Target, deadline: float) -> Iterator[httpcore2.ConnectionPool]:
    pool = httpcore2.ConnectionPool(
        ssl_context=httpx2.create_ssl_context(),
        max_connections=1,
        network_backend=PinnedBackend(target.addresses, deadline),
    )
    with pool:
        yield pool


def _exchange(
    pool: httpcore2.ConnectionPool,
    method: str,
    target: Target,
    headers: list[tuple[str, str]],
    content: bytes | None,
    deadline: float,
) -> Answer:
    limit = gateway_settings().OAUTH_MAX_RESPONSE_BYTES
    url = httpcore2.URL(
        scheme=target.scheme.encode(),
        host=target.host.encode("idna"),
        port=target.port,
        target=target.target.encode(),
    )
    with pool.stream(method, url, headers=headers, content=content) as response:
        declared = _content_length(response.headers)
        if declared is not None and declared > limit:
            raise FetchFailed(f"{target.host}: body of {declared} bytes over the cap")
        body = bytearray()
        for chunk in response.iter_stream():
            body += chunk
            if len(body) > limit:
                raise FetchFailed(f"{target.host}: body over {limit} bytes")
            if time.monotonic() >= deadline:
                raise FetchFailed(f"{target.host}: past the deadline")
        return Answer(response.status, bytes(body))


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length" and value.strip().isdigit():
            return int(value)
    return None


class PinnedBackend(httpcore2.NetworkBackend):
    """Connect to the vetted addresses only, whatever host is asked for."""

    def __init__(self, addresses: tuple[str, ...], deadline: float) -> None:
        self.addresses = addresses
        self.deadline = deadline
        self._backend = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        failure: Exception = httpcore2.ConnectError(f"no address for {host}")
        for address in self.addresses:
            try:
                stream = self._backend.connect_tcp(
                    address,
                    port,
                    timeout=_left(self.deadline, timeout),
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except httpcore2.ConnectError as exc:
                failure = exc
                continue
            return DeadlineStream(stream, self.deadline)
        raise failure

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        raise httpcore2.ConnectError("Unix sockets are never used here.")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class DeadlineStream(httpcore2.NetworkStream):
    """Every read and write waits no longer than the call has left."""

    def __init__(self, stream: httpcore2.NetworkStream, deadline: float) -> None:
        self.stream = stream
        self.deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, _left(self.deadline, timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, _left(self.deadline, timeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        secured = self.stream.start_tls(
            ssl_context, server_hostname, _left(self.deadline, timeout)
        )
        return DeadlineStream(secured, self.deadline)

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


def _left(deadline: float, timeout: float | None) -> float:
    """Seconds left before the deadline (at most ``timeout``).

    Raises:
        httpcore2.ReadTimeout: the deadline has passed.
    """
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpcore2.ReadTimeout("The fetch's deadline has passed.")
    return left if timeout is None else min(timeout, left)
