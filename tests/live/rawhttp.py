"""A raw HTTP/1.1 client: sends bytes exactly as given, reads the answer."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        values = self.all(name)
        return values[0] if values else None

    def all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def json(self) -> Any:
        return json.loads(self.body)


def send(host: str, port: int, data: bytes, timeout: float = 10.0) -> RawResponse:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return parse(b"".join(chunks))


def parse(raw: bytes) -> RawResponse:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = [
        (k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in lines[1:])
    ]
    if any(k.lower() == "transfer-encoding" and "chunked" in v for k, v in headers):
        body = _unchunk(body)
    return RawResponse(status, headers, body)


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2 :]
    return out


def request(
    method: str,
    target: str,
    *,
    host: str,
    body: bytes = b"",
    headers: list[tuple[str, str]] | None = None,
    content_length: bool = True,
) -> bytes:
    """Build request bytes; headers are sent as given, duplicates included."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers or []]
    if content_length and body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
