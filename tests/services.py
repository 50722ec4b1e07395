"""Whether the machine's shared services answer, for tests that need them."""

from __future__ import annotations

import socket


def redis_running() -> bool:
    """Redis listening on 127.0.0.1:6379."""
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.2):
            return True
    except OSError:
        return False
