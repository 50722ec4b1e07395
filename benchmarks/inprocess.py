"""µs per ``tools/call``: the gateway view vs the bare ceiling view, in-process.

    .venv/bin/python benchmarks/inprocess.py [--calls 5000] [--repeats 5]
        [--audit off|on|durable|both|all] [--database sqlite|postgres]
        [--telemetry off|metrics|tracing|tracing-memory|all] [--profile]

Each side runs in its own child process (its own Django settings) and is
called as a WSGI application directly: no server, no socket, Django's whole
handler and middleware included. The gateway runs with authentication
disabled (``MCP_AUTH_MODE=dangerously-disabled-for-development``) on a
SQLite database; that mode still reads the tenant row, so the child also
times that query alone, and the report subtracts it ("auth excluded": with
auth on, that row comes with the token's one query). The audit log is off
for the budget (``--audit off``, the default) and may be measured on beside
it. Time is the process's CPU time, every thread included (a sync engine
runs in the engine pool's thread). The best of the repeats is reported,
which is the least disturbed by other load.

``--without compiled`` / ``--without simple_schema`` (repeatable) runs the
gateway with that optimisation replaced by what it stands in for: the
ORM's own ``QuerySet.first()`` and ``Model.save()`` for ``compiled``, only
jsonschema's cached validator for ``simple_schema``; the report shows what
each saves. ``--audit both`` includes the audit INSERT, the one statement
``compiled`` writes (the tenant read is the other).

``--audit on`` writes the row with the default ``AUDIT_DURABILITY``
(``async``), ``--audit durable`` with ``durable``; ``all`` runs off, on and
durable. ``--database postgres`` runs the gateway on a PostgreSQL database
(``bench_inprocess`` at 127.0.0.1:5432, recreated) instead of SQLite in
memory: a commit's wait for the disk is wall time, not CPU time, so each
row then also shows the wall µs per call.

``--telemetry`` adds rows with Prometheus metrics on (``MCP_METRICS_TOKEN``
set), with an OpenTelemetry SDK tracer provider and no exporter
(``tracing``), and with an in-memory exporter (``tracing-memory``); ``all``
runs them beside the row with both off.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SQLITE_URL = "sqlite://:memory:"
PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
PG_URL = f"{PG_SERVER}/bench_inprocess?conn_max_age=600"
AUDITS = {"both": ("off", "on"), "all": ("off", "on", "durable")}
BUDGET_US = 60.0
TELEMETRY = ("off", "metrics", "tracing", "tracing-memory")
BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "demo_echo", "arguments": {"text": "hello"}},
    }
).encode()


def environ(body: bytes = BODY) -> dict[str, Any]:
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/t/bench/mcp",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }


def per_call_us(function: Callable[[], object], calls: int, repeats: int) -> float:
    """Best mean CPU µs per call over ``repeats`` rounds of ``calls`` calls.

    CPU time of this process (all its threads), not wall time, so other
    processes competing for the cores inflate it far less.
    """
    return per_call(function, calls, repeats)["cpu"]


def per_call(
    function: Callable[[], object], calls: int, repeats: int
) -> dict[str, float]:
    """Best mean CPU and wall µs per call over ``repeats`` rounds."""
    for _ in range(min(calls, 500)):
        function()
    cpu, wall = [], []
    for _ in range(repeats):
        started, clock = time.process_time(), time.perf_counter()
        for _ in range(calls):
            function()
        cpu.append((time.process_time() - started) / calls * 1e6)
        wall.append((time.perf_counter() - clock) / calls * 1e6)
    return {"cpu": min(cpu), "wall": min(wall)}


# -- Children -----------------------------------------------------------------


def _wsgi_call(application: Any) -> Callable[[], bytes]:
    status: list[str] = []

    def start_response(code: str, headers: object, exc_info: object = None) -> None:
        status.append(code)

    def call() -> bytes:
        status.clear()
        chunks = application(environ(), start_response)
        body = b"".join(chunks)
        chunks.close()
        if not status[0].startswith("200") or b'"result"' not in body:
            raise RuntimeError(f"bad answer {status[0]}: {body[:200]!r}")
        return body

    return call


def child_ceiling(args: argparse.Namespace) -> dict[str, float]:
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.ceiling.settings"
    from django.core.wsgi import get_wsgi_application

    call = _wsgi_call(get_wsgi_application())
    return {"view_us": per_call_us(call, args.calls, args.repeats)}


def child_gateway(args: argparse.Namespace) -> dict[str, float]:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            # SQLite in memory: a query costs its CPU, never a disk sync.
            "DATABASE_URL": PG_URL if args.database == "postgres" else SQLITE_URL,
            "SECRET_KEY": "inprocess-benchmark-" + "x" * 40,
            "DEBUG": "false",
            "MCP_AUTH_MODE": "dangerously-disabled-for-development",
            "MCP_AUDIT_CALLS": "false" if args.audit == "off" else "true",
            "MCP_AUDIT_DURABILITY": "durable" if args.audit == "durable" else "async",
        }
    )
    if args.telemetry == "metrics":
        os.environ["MCP_METRICS_TOKEN"] = "inprocess-benchmark"  # noqa: S105
    if args.telemetry.startswith("tracing"):
        _tracer_provider(memory=args.telemetry == "tracing-memory")
    from django.core.wsgi import get_wsgi_application

    get_wsgi_application()  # the apps, before anything is replaced
    for name in args.without:
        _WITHOUT[name]()
    from django.db import connection

    application = get_wsgi_application()
    # The view refuses that mode outside DEBUG with loopback hosts, and DEBUG
    # would add its query log to every call; the benchmark measures the view,
    # so it lifts the guard in this child alone.
    from mcp_gateway.endpoint import admission

    admission.auth_may_be_disabled = lambda: True
    _gateway_data()
    call = _wsgi_call(application)
    times = per_call(call, args.calls, args.repeats)
    timer = _QueryTimer()
    with connection.execute_wrapper(timer):
        for _ in range(args.calls):
            call()
    if args.profile:
        _profile(call, args.calls)
    return {
        "view_us": times["cpu"],
        "wall_us": times["wall"],
        "db_us": timer.seconds / args.calls * 1e6,
        "queries": timer.count / args.calls,
    }


def _plain_orm() -> None:
    """``compiled`` replaced by the ORM calls it compiles once."""
    from django.db import DEFAULT_DB_ALIAS

    from mcp_gateway import compiled

    def first(self: Any, using: str = DEFAULT_DB_ALIAS, **values: Any) -> Any:
        return self._build(**values).using(using).order_by().first()

    def insert(self: Any, obj: Any, using: str = DEFAULT_DB_ALIAS) -> None:
        obj.save(using=using, force_insert=True)

    def insert_values(self: Any, values: Any, using: str = DEFAULT_DB_ALIAS) -> None:
        self._model(**values).save(using=using, force_insert=True)

    compiled.CompiledSelect.first = first  # type: ignore[method-assign]
    compiled.CompiledInsert.insert = insert  # type: ignore[method-assign]
    compiled.CompiledInsert.insert_values = insert_values  # type: ignore[method-assign]


def _jsonschema_only() -> None:
    """``simple_schema`` replaced by jsonschema's cached validator alone."""
    from mcp_gateway.runtime import simple_schema

    simple_schema.plain_check = lambda schema: None


_WITHOUT: dict[str, Callable[[], None]] = {
    "compiled": _plain_orm,
    "simple_schema": _jsonschema_only,
}


def _tracer_provider(memory: bool) -> None:
    """The SDK's provider: no exporter, or an in-memory one (kept small)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )

    provider = TracerProvider()
    if memory:
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)


class _QueryTimer:
    """Add up the CPU time spent inside the database driver's execute."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.count = 0

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, *rest: Any
    ) -> Any:
        started = time.thread_time()
        try:
            return execute(sql, params, *rest)
        finally:
            self.seconds += time.thread_time() - started
            self.count += 1


def _gateway_data() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from mcp_gateway import bookkeeping
    from mcp_gateway.models import Tenant

    tenant, made = Tenant.objects.get_or_create(slug="bench", name="bench")
    if made:
        bookkeeping.expose(tenant, "demo.echo")


def _profile(call: Callable[[], object], calls: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stderr)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


# -- Parent -------------------------------------------------------------------


def run_child(
    side: str,
    args: argparse.Namespace,
    audit: str = "off",
    telemetry: str = "off",
    without: str = "",
) -> dict[str, float]:
    command = [
        sys.executable,
        __file__,
        "--child",
        side,
        "--calls",
        str(args.calls),
        "--repeats",
        str(args.repeats),
        "--audit",
        audit,
        "--database",
        args.database,
        "--telemetry",
        telemetry,
    ]
    if args.profile and side == "gateway":
        command.append("--profile")
    for name in filter(None, without.split(",")):
        command += ["--without", name]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(  # noqa: S603 - ourselves
        command, cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stderr[-2000:]}")
    if args.profile and side == "gateway":
        print(done.stderr)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="child runs per side")
    parser.add_argument(
        "--audit", choices=("off", "on", "durable", "both", "all"), default="off"
    )
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--telemetry",
        choices=(*TELEMETRY, "all"),
        default="off",
        help="metrics and tracing rows (docs/operations.md)",
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        choices=sorted(_WITHOUT),
        help="also measure the gateway without this optimisation (repeatable)",
    )
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", choices=("gateway", "ceiling"))
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        child = child_gateway if args.child == "gateway" else child_ceiling
        print(json.dumps(child(args)))
        return
    audits = AUDITS.get(args.audit, (args.audit,))
    if args.database == "postgres":
        _fresh_postgres_database()
    kinds = TELEMETRY if args.telemetry == "all" else (args.telemetry,)
    variants = ["", *args.without]
    rows = [(a, k, v) for a in audits for k in kinds for v in variants]
    ceiling: list[dict[str, float]] = []
    gateway: dict[tuple[str, str, str], list[dict[str, float]]] = {
        row: [] for row in rows
    }
    for _ in range(args.rounds):  # alternate, so drifting load hits all
        ceiling.append(run_child("ceiling", args))
        for audit, kind, without in rows:
            gateway[audit, kind, without].append(
                run_child("gateway", args, audit, kind, without)
            )
    bare = min(r["view_us"] for r in ceiling)
    print(f"ceiling view (bare Django, WSGI):           {bare:7.1f} µs/call")
    for (audit, kind, without), runs in gateway.items():
        if kind != "off" or len(kinds) > 1:
            print(f"telemetry: {kind}")
        if without:
            full = min(r["view_us"] for r in runs)
            same = min(r["view_us"] for r in gateway[audit, kind, ""])
            print(f"without {without} (audit {audit}): {full:7.1f} µs/call")
            print(f"  {without} saves:                    {full - same:7.1f} µs/call")
            continue
        report(bare, audit, runs)


def _fresh_postgres_database() -> None:
    """Recreate ``bench_inprocess`` and migrate it once, before the runs."""
    import psycopg

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS bench_inprocess WITH (FORCE)")
        conn.execute("CREATE DATABASE bench_inprocess")
    env = {
        **os.environ,
        "DATABASE_URL": PG_URL,
        "SECRET_KEY": "inprocess-benchmark-" + "x" * 40,
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )


def report(bare: float, audit: str, gateway: list[dict[str, float]]) -> None:
    full = min(r["view_us"] for r in gateway)
    query = statistics.median(r["db_us"] for r in gateway)
    count = statistics.median(r["queries"] for r in gateway)
    added = full - query - bare
    print(f"gateway view (auth disabled, audit {audit + '):':9}  {full:7.1f} µs/call")
    if "wall_us" in gateway[0]:
        wall = min(r["wall_us"] for r in gateway)
        print(f"  wall time per call:                       {wall:7.1f} µs/call")
    print(f"  inside the database ({count:.0f} queries/call):     {query:7.1f} µs")
    print(f"  gateway adds over the ceiling, DB apart:  {added:7.1f} µs/call")
    if audit == "off":
        verdict = "within" if added <= BUDGET_US else "OVER"
        print(f"  budget {BUDGET_US:.0f} µs (audit off): {verdict}")


if __name__ == "__main__":
    main()
