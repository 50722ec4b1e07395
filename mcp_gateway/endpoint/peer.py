"""Whether a sync server's client has closed its connection (gunicorn).

Under ASGI the server tells the view (Django cancels it). A WSGI server
says nothing, but gunicorn's workers (sync and gthread) hand the view the
client's socket as ``environ["gunicorn.socket"]``. A closed connection
reads as end of file: ``recv`` with ``MSG_PEEK`` returns ``b""``, where
data waiting (the next request of a keep-alive client) is left for the
server to read, and an open idle connection has nothing to read at all.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT


def probe(meta: dict[str, Any]) -> Callable[[], bool] | None:
    """A probe of the request's client connection, or ``None`` when the
    server hands over no socket (uvicorn, the test client)."""
    sock = meta.get("gunicorn.socket")
    if not isinstance(sock, socket.socket):
        return None
    return lambda: gone(sock)


def gone(sock: socket.socket) -> bool:
    """Whether the peer has closed (or reset) the connection; nothing read
    is consumed. Under TLS the bytes peeked are records, never end of file
    until the connection closes."""
    try:
        # socket.socket's own recv: an SSLSocket's refuses flags.
        return socket.socket.recv(sock, 1, _PEEK) == b""
    except (BlockingIOError, InterruptedError):
        return False  # open, nothing sent
    except ConnectionError:
        return True  # reset
    except OSError:
        return False  # not ours to judge: the server will find out
