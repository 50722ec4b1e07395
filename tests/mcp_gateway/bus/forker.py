"""Subscribe, fork, and report what parent and child each heard.

Run as ``python -m tests.mcp_gateway.bus.forker``; prints one JSON object.
The parent subscribes before the fork, as a ``--preload``ed gunicorn
master would; the child, like a worker, must get a bus of its own.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

WAIT_SECONDS = 10.0


def main() -> None:
    import django

    django.setup()
    from mcp_gateway import bus

    heard: list[Any] = []
    arrived = threading.Event()

    def on_message(event: Any) -> None:
        if isinstance(event, bus.Message):
            heard.append(event.data)
            arrived.set()

    bus.subscribe(bus.Message, on_message)
    wait(lambda: bus.stats().listening)
    parent_id = bus.process_id()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        os.write(writer, json.dumps(child(bus, heard, arrived)).encode())
        os.close(writer)
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        from_child = json.loads(pipe.read())
    os.waitpid(pid, 0)
    arrived.clear()
    bus.send(parent_id, {"to": "parent"})
    arrived.wait(WAIT_SECONDS)
    print(
        json.dumps(
            {
                "parent": {"id": parent_id, "pid": os.getpid(), "heard": heard},
                "child": from_child,
            }
        )
    )
    bus.close()


def child(bus: Any, heard: list[Any], arrived: threading.Event) -> dict[str, Any]:
    heard.clear()  # the parent's, copied by fork
    arrived.clear()
    wait(lambda: bus.stats().listening)
    connections = listening_connections()
    bus.send(bus.process_id(), {"to": "child"})
    arrived.wait(WAIT_SECONDS)
    report = {
        "id": bus.process_id(),
        "pid": os.getpid(),
        "heard": list(heard),
        "stats": bus.stats().backend,
        "connections": connections,
    }
    bus.close()  # must leave the parent's connection alone
    return report


def listening_connections() -> list[str]:
    """The bus connections PostgreSQL or Redis sees now, by name."""
    from django.db import connection

    from mcp_gateway import bus

    backend = bus.stats().backend
    if backend == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT application_name FROM pg_stat_activity"
                " WHERE application_name LIKE 'mcpgw-bus %%'"
                " AND datname = current_database()"
            )
            names = [row[0] for row in cursor.fetchall()]
        connection.close()
        return sorted(names)
    if backend == "redis":
        import redis

        client = redis.Redis.from_url(os.environ["CACHE_URL"])
        names = [c["name"] for c in client.client_list()]
        client.close()
        return sorted(n for n in names if n.startswith("mcpgw-bus-"))
    return []


def wait(condition: Any) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            sys.exit("timed out")
        time.sleep(0.01)


if __name__ == "__main__":
    main()
