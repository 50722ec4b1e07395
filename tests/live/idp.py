"""A misbehaving identity provider on loopback, run in a thread of the tests.

Each connection is answered by the server's ``mode``: a JSON document
(``json``), the same document one byte at a time (``drip``), a body over any
cap (``big``), or nothing at all (``hang``). The server counts connections
and keeps each request's Host header, so tests can tell whether, and where,
the gateway connected.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Idp:
    mode: str = "json"
    document: dict[str, Any] = field(default_factory=lambda: {"keys": []})
    drip_seconds: float = 0.5
    big_bytes: int = 2_000_000
    chunked: bool = False
    port: int = 0
    connections: int = 0
    hosts: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serve(self, sock: socket.socket) -> None:
        sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            head = _read_head(conn)
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"host":
                    self.hosts.append(value.strip().decode("latin-1"))
            # OSError: the gateway gave up and closed; that is the point.
            with contextlib.suppress(OSError):
                getattr(self, f"_{self.mode}")(conn)

    def _json(self, conn: socket.socket) -> None:
        conn.sendall(_response(json.dumps(self.document).encode()))

    def _drip(self, conn: socket.socket) -> None:
        for byte in _response(json.dumps(self.document).encode()):
            if self._stop.wait(self.drip_seconds):
                return
            conn.sendall(bytes([byte]))

    def _big(self, conn: socket.socket) -> None:
        padding = " " * self.big_bytes
        body = json.dumps({"keys": [], "padding": padding}).encode()
        if not self.chunked:
            conn.sendall(_response(body))
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        conn.sendall(b"Transfer-Encoding: chunked\r\n\r\n")
        for start in range(0, len(body), 16384):
            piece = body[start : start + 16384]
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        conn.sendall(b"0\r\n\r\n")

    def _hang(self, conn: socket.socket) -> None:
        self._stop.wait(60)


def _read_head(conn: socket.socket) -> bytes:
    data = b""
    deadline = time.monotonic() + 5
    conn.settimeout(5)
    while b"\r\n\r\n" not in data and time.monotonic() < deadline:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.partition(b"\r\n\r\n")[0]


def _response(body: bytes) -> bytes:
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


@contextmanager
def running(**options: Any) -> Iterator[Idp]:
    """Serve on a free loopback port until the block ends."""
    idp = Idp(**options)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    idp.port = sock.getsockname()[1]
    thread = threading.Thread(target=idp.serve, args=(sock,), daemon=True)
    thread.start()
    try:
        yield idp
    finally:
        idp._stop.set()
        thread.join(timeout=5)
        sock.close()
