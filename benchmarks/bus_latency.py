"""Change bus latency: from a publisher's commit to a subscriber's callback.

    .venv/bin/python benchmarks/bus_latency.py [--events 200] [--interval 0.005]
        [--backends postgresql,redis,local]
        [--pg postgres://postgres@127.0.0.1:5432] [--redis redis://127.0.0.1:6379/13]

For each backend, one process subscribes to catalog changes and another
publishes ``--events`` of them, each in its own transaction, ``--interval``
seconds apart (latency, not throughput). The clock starts just before the
publisher's COMMIT and stops when the subscriber's callback runs (Linux's
monotonic clock is one clock for every process of the host). The local
(in-process) bus has one process by definition: it publishes and
subscribes in the same one. PostgreSQL gets a database of its own, created
and dropped here; Redis uses the given database number.

Prints p50, p99 and the worst, in milliseconds, and how many events
arrived (the bus delivers at most once; all of them should).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
WAIT_SECONDS = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.005)
    parser.add_argument("--backends", default="postgresql,redis,local")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--role", choices=["listen", "publish", "both"])
    options = parser.parse_args()
    if options.role:
        return ROLES[options.role](options.events, options.interval)
    print(
        f"{'backend':<12}{'events':>8}{'arrived':>9}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'max ms':>9}"
    )
    for backend in options.backends.split(","):
        latencies, arrived = measure(backend, options)
        print(
            f"{backend:<12}{options.events:>8}{arrived:>9}"
            f"{percentile(latencies, 50):>9.2f}{percentile(latencies, 99):>9.2f}"
            f"{max(latencies):>9.2f}"
        )
    return None


def measure(backend: str, options: argparse.Namespace) -> tuple[list[float], int]:
    sqlite = ROOT / "benchmarks" / ".work" / f"bus-{os.getpid()}.sqlite3"
    sqlite.parent.mkdir(parents=True, exist_ok=True)
    env = {"MCP_BUS": backend, "DATABASE_URL": f"sqlite:///{sqlite}"}
    if backend == "redis":
        env["CACHE_URL"] = options.redis
    database = None
    if backend == "postgresql":
        database = f"bench_bus_{secrets.token_hex(4)}"
        admin(options.pg, f"CREATE DATABASE {database}")
        env["DATABASE_URL"] = f"{options.pg}/{database}"
    try:
        if backend == "local":
            sent, received = run_both(env, options)
        else:
            sent, received = run_pair(env, options)
    finally:
        if database is not None:
            admin(options.pg, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        sqlite.unlink(missing_ok=True)
    latencies = [(received[k] - sent[k]) / 1e6 for k in sent if k in received]
    return latencies, len(latencies)


def run_pair(env: dict[str, str], options: argparse.Namespace) -> tuple[Any, Any]:
    listener = child("listen", env, options, stdout=subprocess.PIPE)
    if listener.stdout is None or listener.stdout.readline().strip() != "ready":
        raise SystemExit("the listener did not start")
    publisher = child("publish", env, options, stdout=subprocess.PIPE)
    sent_text, _ = publisher.communicate(timeout=WAIT_SECONDS)
    received_text, _ = listener.communicate(timeout=WAIT_SECONDS)
    return numbered(sent_text), numbered(received_text)


def run_both(env: dict[str, str], options: argparse.Namespace) -> tuple[Any, Any]:
    both = child("both", env, options, stdout=subprocess.PIPE)
    out, _ = both.communicate(timeout=WAIT_SECONDS)
    sent, received = out.strip().splitlines()[-2:]
    return numbered(sent), numbered(received)


def child(
    role: str, env: dict[str, str], options: argparse.Namespace, **kwargs: Any
) -> subprocess.Popen[str]:
    return subprocess.Popen(  # noqa: S603 - this script, in another role
        [
            sys.executable,
            __file__,
            "--role",
            role,
            "--events",
            str(options.events),
            "--interval",
            str(options.interval),
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PYTHONPATH": str(ROOT),
            **env,
        },
        text=True,
        **kwargs,
    )


def numbered(text: str) -> dict[int, int]:
    return {int(k): v for k, v in json.loads(text.strip().splitlines()[-1]).items()}


def admin(url: str, statement: str) -> None:
    with psycopg.connect(f"{url}/postgres", autocommit=True) as conn:
        conn.execute(statement)  # type: ignore[arg-type]


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# The roles, each in its own process.


def subscribe(count: int) -> tuple[dict[int, int], threading.Event]:
    import django

    django.setup()
    from mcp_gateway import bus

    received: dict[int, int] = {}
    complete = threading.Event()

    def heard(event: Any) -> None:
        if isinstance(event, bus.CatalogChanged):
            received[event.version] = time.monotonic_ns()
            if len(received) >= count:
                complete.set()

    bus.subscribe(bus.CatalogChanged, heard)
    while not bus.stats().listening:
        time.sleep(0.01)
    return received, complete


def publish(count: int, interval: float) -> dict[int, int]:
    import django

    django.setup()
    from django.db import transaction

    from mcp_gateway import bus

    sent: dict[int, int] = {}
    for seq in range(count):
        with transaction.atomic():
            bus.publish(bus.CatalogChanged(tenant=1, version=seq))
            sent[seq] = time.monotonic_ns()  # the COMMIT comes next
        time.sleep(interval)
    return sent


def listen_role(count: int, interval: float) -> None:
    received, complete = subscribe(count)
    print("ready", flush=True)
    complete.wait(WAIT_SECONDS)
    print(json.dumps(received))


def publish_role(count: int, interval: float) -> None:
    print(json.dumps(publish(count, interval)))


def both_role(count: int, interval: float) -> None:
    received, complete = subscribe(count)
    sent = publish(count, interval)
    complete.wait(WAIT_SECONDS)
    print(json.dumps(sent))
    print(json.dumps(received))


ROLES = {"listen": listen_role, "publish": publish_role, "both": both_role}

if __name__ == "__main__":
    main()
