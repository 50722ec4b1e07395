"""What the reference project's PostgreSQL connection defaults cost and save.

    .venv/bin/python benchmarks/connections.py [--requests 2000] [--repeats 3]
        [--database-url postgres://postgres@127.0.0.1:5432/postgres]

Each mode runs in a child process with the reference settings (so the
defaults are exactly what `config/settings.py` picks) and times what Django
does for a request that asks the database one thing: `request_started`,
one `SELECT 1`, `request_finished`. The modes alternate and the best of the
repeats is printed, in µs per request:

- `new connection each request`: `conn_max_age=0` in the URL, Django's own
  default and the reference project's before it chose one;
- `WSGI default`: persistent connections with health checks;
- `WSGI, no health checks`: `conn_max_age=600` alone;
- `ASGI default`: psycopg's pool (the connection goes back to the pool at
  the end of each request).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MODES = {
    "new connection each request": ("wsgi", "conn_max_age=0"),
    "WSGI default": ("wsgi", ""),
    "WSGI, no health checks": ("wsgi", "conn_max_age=600"),
    "ASGI default": ("asgi", ""),
}


def child(requests: int) -> None:
    import django
    from django.core.signals import request_finished, request_started
    from django.db import connection

    django.setup()
    for _ in range(50):
        _request(connection, request_started, request_finished)
    started = time.perf_counter()
    for _ in range(requests):
        _request(connection, request_started, request_finished)
    elapsed = time.perf_counter() - started
    print(json.dumps(elapsed / requests * 1e6))


def _request(connection: object, started: object, finished: object) -> None:
    started.send(sender=None)  # type: ignore[attr-defined]
    with connection.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute("SELECT 1")
        cursor.fetchone()
    finished.send(sender=None)  # type: ignore[attr-defined]


def run(mode: str, url: str, requests: int) -> float:
    interface, query = MODES[mode]
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "MCP_SERVER_INTERFACE": interface,
        "DATABASE_URL": f"{url}?{query}" if query else url,
    }
    done = subprocess.run(  # noqa: S603 - this script, as the child
        [sys.executable, __file__, "--child", str(requests)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/postgres"
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    best = {mode: float("inf") for mode in MODES}
    for _ in range(args.repeats):
        for mode in MODES:
            best[mode] = min(best[mode], run(mode, args.database_url, args.requests))
    width = max(map(len, MODES))
    print(f"{'mode':<{width}}  µs per request")
    for mode, micros in best.items():
        print(f"{mode:<{width}}  {micros:>14.1f}")


if __name__ == "__main__":
    main()
