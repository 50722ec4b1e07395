"""Two "hosts" on this machine: network namespaces, or loopback.

``namespaces()`` makes two network namespaces on a private /24 of its own
(a bridge in the root namespace, a veth pair per namespace), unique per run
and removed however the block ends. The machine's PostgreSQL and Redis
listen on 127.0.0.1 only, which a namespace cannot reach: a forwarder in
this process, bound to the bridge's address, relays each connection to
them. ``LOOPBACK`` is the same pair of hosts without namespaces: two
processes on 127.0.0.1, the services reached directly.
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from tests.live.servers import Placement
from tests.mcp_gateway.bus.helpers import REDIS_URL

POSTGRESQL = ("127.0.0.1", 5432)


@dataclass(frozen=True)
class Host:
    name: str
    address: str
    """Where its servers bind, and where a client reaches them."""
    prefix: tuple[str, ...] = ()
    """How to run a program on it (``ip netns exec NS``)."""

    def placement(self, workers: int = 1) -> Placement:
        """Where a server of this host runs, with ``workers`` processes."""
        return Placement(self.address, self.prefix, workers)


@dataclass(frozen=True)
class Network:
    a: Host
    b: Host
    services: Mapping[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    """Where a host reaches each service of the machine (identity on loopback)."""

    def reach(self, url: str) -> str:
        """``url`` (PostgreSQL, Redis) as the hosts reach it."""
        parts = urlsplit(url)
        if parts.hostname is None:
            return url  # SQLite: a file, the same in every namespace
        default = 5432 if parts.scheme.startswith("postgres") else 6379
        key = (parts.hostname, parts.port or default)
        host, port = self.services.get(key, key)
        netloc = f"{host}:{port}"
        if parts.username:
            netloc = f"{parts.username}@{netloc}"
        return urlunsplit(parts._replace(netloc=netloc))

    @property
    def redis_url(self) -> str:
        return self.reach(REDIS_URL)


LOOPBACK = Network(Host("A", "127.0.0.1"), Host("B", "127.0.0.1"))


def can_make_namespaces() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def _free_subnet() -> str:
    """A 10.x.y. prefix no interface or route of this machine uses yet."""
    routes = subprocess.run(
        ["ip", "-4", "route", "show", "table", "all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for _ in range(100):
        prefix = f"10.{random.randint(200, 250)}.{random.randint(0, 255)}."  # noqa: S311
        if prefix not in routes:
            return prefix
    raise RuntimeError("no free private subnet")


@contextlib.contextmanager
def namespaces() -> Iterator[Network]:
    """Two namespaces, their bridge and the service forwarders, then none."""
    tag = secrets.token_hex(3)
    subnet = _free_subnet()
    bridge, gateway = f"mgw{tag}br", f"{subnet}1"
    made: list[str] = []
    forwarders: list[Forwarder] = []
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{gateway}/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        hosts = []
        for number, name in enumerate("ab", start=2):
            namespace = f"mgw{tag}{name}"
            _ip("netns", "add", namespace)
            made.append(namespace)
            outside, inside = f"mgw{tag}{name}0", f"mgw{tag}{name}1"
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", outside, "master", bridge, "up")
            _ip("link", "set", inside, "netns", namespace)
            run = ("ip", "netns", "exec", namespace)
            address = f"{subnet}{number}"
            _ip("-n", namespace, "addr", "add", f"{address}/24", "dev", inside)
            _ip("-n", namespace, "link", "set", inside, "up")
            _ip("-n", namespace, "link", "set", "lo", "up")
            hosts.append(Host(name.upper(), address, run))
        services = {}
        for target in (POSTGRESQL, _redis()):
            forwarders.append(Forwarder(gateway, target))
            services[target] = (gateway, forwarders[-1].port)
        yield Network(hosts[0], hosts[1], services)
    finally:
        for forwarder in forwarders:
            forwarder.close()
        for namespace in made:  # its veth ends go with it
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)


def _redis() -> tuple[str, int]:
    parts = urlsplit(REDIS_URL)
    return parts.hostname or "127.0.0.1", parts.port or 6379


class Forwarder:
    """Relay every TCP connection to ``bind``:port to ``target``."""

    def __init__(self, bind: str, target: tuple[str, int]) -> None:
        self.target = target
        self._server = socket.create_server((bind, 0))
        self.port = int(self._server.getsockname()[1])
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)  # wakes accept()
        self._server.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass  # either side closed
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
