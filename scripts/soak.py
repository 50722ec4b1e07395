"""A bounded soak on loopback: load, live exposure changes, then checks.

Creates a fresh PostgreSQL database, migrates it, sets up the tenants and
their tokens, starts gunicorn (two workers), and for ``--seconds`` sends a
mix of ``tools/list`` and ``tools/call`` from ``--concurrency`` clients
across every tenant and token kind, while a second process exposes and
unexposes tools every 100 ms through ``mcp_gateway.bookkeeping`` and logs
which tools each (tenant, catalog version) holds. Then it checks:

- no 5xx and no transport error;
- every listed catalog equals the logged one for its tenant and version
  (never half-applied, never another tenant's tool);
- the audit rows are exactly the ``tools/call`` requests that reached
  dispatch (answered 200 or 403), matched by JSON-RPC id;

prints the numbers, drops the database, and exits 1 on any failure.

The three token kinds are API tokens with three scope sets (``mcp:tools``;
``mcp:tools:read``; both, expiring in an hour); OAuth is not exercised.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import psycopg

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
TICK = 0.1
ALWAYS = "demo.echo"
POOLS = (("demo.add", "demo.fail"), ("demo.whoami", "demo.reject"))
"""Even tenants toggle the first pool, odd ones the second: a tool of the
other pool in a listing is another tenant's tool."""
KINDS = {
    "tools": (["mcp:tools"], None),
    "read": (["mcp:tools:read"], None),
    "expiring": (["mcp:tools", "mcp:tools:read"], 3600),
}
rng = random.Random()  # noqa: S311  # picks load, not secrets
ARGUMENTS: dict[str, dict[str, Any]] = {
    "demo_echo": {"text": "soak"},
    "demo_add": {"a": 1, "b": 2},
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--toggler", metavar="LOG", help=argparse.SUPPRESS)
    return parser.parse_args()


# -- the database ------------------------------------------------------------


def maintenance(pg: str, sql: str) -> None:
    with psycopg.connect(f"{pg}/postgres", autocommit=True) as conn:
        conn.execute(sql.encode())


def django_env(db_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": db_url,
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(48),
    }


def setup_django(db_url: str) -> None:
    os.environ.update(django_env(db_url))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def pool_of(index: int) -> tuple[str, ...]:
    return POOLS[index % 2]


def populate(tenants: int, log: Path) -> dict[str, dict[str, str]]:
    """Create the tenants and tokens; log each tenant's first catalog."""
    from django.contrib.auth.models import User

    from mcp_gateway import bookkeeping, tokens
    from mcp_gateway.models import Tenant

    secrets_by_tenant: dict[str, dict[str, str]] = {}
    for index in range(tenants):
        tenant = Tenant.objects.create(slug=f"t{index:02d}", name=f"Tenant {index}")
        bookkeeping.expose_many(tenant, [ALWAYS, pool_of(index)[0]])
        user = User.objects.create_user(f"user{index:02d}")
        secrets_by_tenant[tenant.slug] = {
            kind: tokens.issue(tenant, user, scopes=scopes, expires_in=life).secret
            for kind, (scopes, life) in KINDS.items()
        }
        with log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(snapshot(tenant)) + "\n")
    return secrets_by_tenant


def snapshot(tenant: Any) -> dict[str, Any]:
    tenant.refresh_from_db(fields=["catalog_version"])
    tools = sorted(tenant.exposures.values_list("tool_name", flat=True))
    return {"tenant": tenant.slug, "version": tenant.catalog_version, "tools": tools}


# -- the second process: exposure changes every 100 ms ----------------------


def toggle(seconds: float, log: Path) -> int:
    """Expose or unexpose one or two pool engines of a random tenant per tick."""
    from django.db import transaction

    from mcp_gateway import bookkeeping
    from mcp_gateway.models import Tenant

    tenants = list(Tenant.objects.order_by("slug"))
    changes, start = 0, time.monotonic()
    with log.open("a", encoding="utf-8") as out:
        while time.monotonic() < start + seconds:
            index = rng.randrange(len(tenants))
            tenant, pool = tenants[index], pool_of(index)
            picked = rng.sample(pool, rng.randint(1, len(pool)))
            with transaction.atomic():  # the logged state is the committed one
                exposed = set(tenant.exposures.values_list("engine_id", flat=True))
                if to_add := [e for e in picked if e not in exposed]:
                    bookkeeping.expose_many(tenant, to_add)
                else:
                    bookkeeping.unexpose_many(tenant, picked)
                line = snapshot(tenant)
            out.write(json.dumps(line) + "\n")
            out.flush()
            changes += 1
            time.sleep(max(0.0, start + changes * TICK - time.monotonic()))
    return changes


# -- the server ---------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def start_gunicorn(db_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [
        str(BIN / "gunicorn"),
        "config.wsgi:application",
        f"--bind={HOST}:{port}",
        "--workers=2",
        "--worker-class=gthread",
        "--threads=16",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603  # our own fixed command
            command, cwd=ROOT, env=django_env(db_url), stdout=out, stderr=out
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection((HOST, port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"gunicorn did not start; see {log}")


# -- the load -----------------------------------------------------------------


@dataclass
class Stats:
    requests: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    transport_errors: Counter[str] = field(default_factory=Counter)
    listings: list[tuple[str, int, list[str]]] = field(default_factory=list)
    dispatched_ids: set[str] = field(default_factory=set)
    results: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    known: dict[str, list[str]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    elapsed: float = 0.0


async def client_loop(
    client: httpx2.AsyncClient,
    port: int,
    tokens: dict[str, dict[str, str]],
    stats: Stats,
    deadline: float,
    worker: int,
) -> None:
    serial = 0
    while time.monotonic() < deadline:
        serial += 1
        slug = rng.choice(list(tokens))
        kind = rng.choice(list(KINDS))
        request_id = f"w{worker}-{serial}"
        message = build(slug, stats, request_id)
        stats.requests += 1
        started = time.monotonic()
        try:
            response = await client.post(
                f"http://{HOST}:{port}/t/{slug}/mcp",
                json=message,
                headers={"Authorization": f"Bearer {tokens[slug][kind]}"},
            )
        except httpx2.HTTPError as exc:
            stats.transport_errors[type(exc).__name__] += 1
            continue
        stats.latencies.append(time.monotonic() - started)
        record(stats, slug, message, response)


def build(slug: str, stats: Stats, request_id: str) -> dict[str, Any]:
    if rng.random() < 0.5:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
    name = rng.choice(stats.known.get(slug) or ["demo_echo"])
    params = {"name": name, "arguments": ARGUMENTS.get(name, {})}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": params,
    }


def record(
    stats: Stats, slug: str, message: dict[str, Any], response: httpx2.Response
) -> None:
    method, status = message["method"], response.status_code
    stats.statuses[f"{method} {status}"] += 1
    if status >= 500:
        stats.problems.append(f"{status} for {method} on {slug}: {response.text[:200]}")
        return
    if method == "tools/call" and status in (200, 403):
        stats.dispatched_ids.add(message["id"])
    if status != 200:
        return
    body = response.json()
    if method == "tools/list":
        result = body["result"]
        version = result["_meta"]["io.github.django-mcp-gateway/catalogVersion"]
        names = sorted(tool["name"] for tool in result["tools"])
        stats.listings.append((slug, int(version), names))
        stats.known[slug] = names
    else:
        stats.results[call_result(stats, slug, message, body)] += 1


def call_result(
    stats: Stats, slug: str, message: dict[str, Any], body: dict[str, Any]
) -> str:
    if "error" in body:
        return "invalid"
    result = body["result"]
    if result.get("isError"):
        return "tool_error"
    if message["params"]["name"] == "demo_whoami":
        tenant = result["structuredContent"]["tenant"]
        if tenant != slug:
            stats.problems.append(f"whoami on {slug} ran as {tenant}")
    return "ok"


async def load(
    port: int, tokens: dict[str, dict[str, str]], seconds: float, concurrency: int
) -> Stats:
    stats = Stats()
    limits = httpx2.Limits(max_connections=concurrency)
    async with httpx2.AsyncClient(limits=limits, timeout=30.0) as client:
        await warm_up(client, port, tokens)
        started = time.monotonic()
        deadline = started + seconds
        await asyncio.gather(
            *(
                client_loop(client, port, tokens, stats, deadline, worker)
                for worker in range(concurrency)
            )
        )
    stats.elapsed = time.monotonic() - started
    return stats


async def warm_up(
    client: httpx2.AsyncClient, port: int, tokens: dict[str, dict[str, str]]
) -> None:
    """Pay both workers' cold imports before the clock starts; not counted."""
    slug = next(iter(tokens))
    message = {"jsonrpc": "2.0", "id": "warm-up", "method": "tools/list"}
    headers = {"Authorization": f"Bearer {tokens[slug]['tools']}"}
    url = f"http://{HOST}:{port}/t/{slug}/mcp"
    await asyncio.gather(
        *(client.post(url, json=message, headers=headers) for _ in range(8))
    )


# -- the checks ---------------------------------------------------------------


def read_log(log: Path) -> dict[tuple[str, int], list[str]]:
    logged: dict[tuple[str, int], list[str]] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        logged[(entry["tenant"], entry["version"])] = entry["tools"]
    return logged


def check_catalogs(stats: Stats, logged: dict[tuple[str, int], list[str]]) -> None:
    for slug, version, names in stats.listings:
        expected = logged.get((slug, version))
        if expected is None:
            stats.problems.append(f"{slug} v{version}: a version never logged")
        elif names != expected:
            stats.problems.append(f"{slug} v{version}: listed {names}, {expected}")
        foreign = set(names) - tools_of(int(slug[1:]))
        if foreign:
            stats.problems.append(f"{slug} v{version}: another tenant's {foreign}")


def tools_of(index: int) -> set[str]:
    return {e.replace(".", "_") for e in (ALWAYS, *pool_of(index))}


def check_audit(stats: Stats) -> dict[str, int]:
    from mcp_gateway.audit.models import ToolCall

    rows = list(ToolCall.objects.values_list("request_id", "outcome"))
    audited = {request_id for request_id, _ in rows}
    lost = stats.dispatched_ids - audited
    extra = audited - stats.dispatched_ids
    if lost or extra or len(rows) != len(stats.dispatched_ids):
        stats.problems.append(
            f"audit: {len(rows)} rows for {len(stats.dispatched_ids)} calls; "
            f"lost {sorted(lost)[:5]}, unexpected {sorted(extra)[:5]}"
        )
    return dict(Counter(outcome for _, outcome in rows))


def report(stats: Stats, changes: int, outcomes: dict[str, int]) -> None:
    took = stats.elapsed
    print(f"requests: {stats.requests} in {took:.1f} s ({stats.requests / took:.0f}/s)")
    if stats.latencies:
        ms = sorted(1000 * latency for latency in stats.latencies)
        p50, p99 = ms[len(ms) // 2], ms[int(len(ms) * 0.99)]
        print(f"latency ms: p50 {p50:.0f}, p99 {p99:.0f}, max {ms[-1]:.0f}")
    for key, count in sorted(stats.statuses.items()):
        print(f"  {key}: {count}")
    for name, count in sorted(stats.transport_errors.items()):
        print(f"  transport error {name}: {count}")
    print(f"tools/call results seen by clients: {dict(sorted(stats.results.items()))}")
    print(f"exposure changes: {changes}; listings checked: {len(stats.listings)}")
    print(f"audit rows: {sum(outcomes.values())} {dict(sorted(outcomes.items()))}")
    print(f"tools/call that reached dispatch: {len(stats.dispatched_ids)}")


# -- the run ------------------------------------------------------------------


def soak(args: argparse.Namespace, db_url: str, tmp: Path) -> Stats:
    log, port = tmp / "catalogs.jsonl", free_port()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity=0"],
        cwd=ROOT,
        env=django_env(db_url),
        check=True,
    )
    setup_django(db_url)
    tokens = populate(args.tenants, log)
    server = start_gunicorn(db_url, port, tmp / "gunicorn.log")
    try:
        toggler = subprocess.Popen(  # noqa: S603  # this script, our arguments
            [sys.executable, __file__, f"--seconds={args.seconds}", f"--toggler={log}"],
            env=django_env(db_url),
            stdout=subprocess.PIPE,
            text=True,
        )
        stats = asyncio.run(load(port, tokens, args.seconds, args.concurrency))
        out, _ = toggler.communicate(timeout=60)
    finally:
        server.terminate()
        server.wait(timeout=30)
    changes = int(out.strip() or 0) if toggler.returncode == 0 else 0
    if changes == 0:
        stats.problems.append(f"the toggler made no change (exit {toggler.returncode})")
    check_catalogs(stats, read_log(log))
    report(stats, changes, check_audit(stats))
    if stats.transport_errors:
        stats.problems.append(f"transport errors: {dict(stats.transport_errors)}")
    return stats


def main() -> int:
    args = parse_args()
    if args.toggler:
        setup_django(os.environ["DATABASE_URL"])
        print(toggle(args.seconds, Path(args.toggler)))
        return 0
    name = f"mcpgw_soak_{int(time.time())}_{os.getpid()}"
    maintenance(args.pg, f"CREATE DATABASE {name}")
    try:
        with tempfile.TemporaryDirectory(prefix="mcpgw-soak-") as tmp:
            stats = soak(args, f"{args.pg}/{name}", Path(tmp))
    finally:
        maintenance(args.pg, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    for problem in stats.problems[:20]:
        print(f"FAIL {problem}", file=sys.stderr)
    print(f"problems: {len(stats.problems)}")
    return 1 if stats.problems else 0


if __name__ == "__main__":
    sys.exit(main())
