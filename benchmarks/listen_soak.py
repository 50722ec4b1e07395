"""Live catalog soak: change streams on two uvicorn workers while staff edit.

    .venv/bin/python benchmarks/listen_soak.py [--streams 200] [--seconds 30]
        [--bus postgresql|redis] [--pg postgres://postgres@127.0.0.1:5432]
        [--redis redis://127.0.0.1:6379/13]

Creates a PostgreSQL database (dropped at the end), migrates it, creates
the tenant ``live`` (``demo.echo`` exposed, one member, one API token) with
the management commands, and starts uvicorn (``config.asgi``, two workers,
uvloop and httptools, ``/metrics`` on, ``MCP_MAX_LISTENERS_PER_TENANT`` =
``--streams``). Then, over raw HTTP on one connection each:

1. it opens ``--streams`` change streams, half ``subscriptions/listen``
   (2026-07-28, a POST) and half the standalone stream (2025-11-25, a GET),
   and finds each one's worker (the worker process holding the server end
   of its TCP connection, from ``/proc``); the resident memory of the
   workers is read before the first stream, with the first ``WARM``
   streams open (the bus subscription and first-use costs paid) and with
   all of them open and idle;
2. a second process (this script, ``--role staff``) exposes and unexposes
   ``demo.add`` through ``mcp_gateway.bookkeeping``, each change its own
   transaction: ``ISOLATED`` changes ``ISOLATED_GAP`` s apart (no
   coalescing: the bus and fan-out latency), then one every 100 ms for
   ``--seconds`` (the burst); the clock starts just before each COMMIT
   (one monotonic clock for every process of the host);
3. every stream records when each ``notifications/tools/list_changed``
   arrives; then the streams are closed and the server's
   ``mcp_gateway_open_streams`` gauge and the workers' socket counts must
   come back to what they were before.

A change's latency on a stream runs from its commit to that stream's next
notification. Fails (exit 1) unless: every stream opens and stays open
until closed, both workers hold streams, every stream hears every isolated
change and the last change of the burst within ``DEADLINE`` s, no stream
goes ``DEADLINE`` s without a notification while the burst lasts, no stream
gets more notifications than coalescing allows (one per 0.25 s), and the
gauge and socket counts return to their baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
SLUG = "live"
TOGGLED = "demo.add"
TICK = 0.1
COALESCE = 0.25
DEADLINE = 1.0
WARM = 10
ISOLATED = 10
ISOLATED_GAP = 0.6
SETTLE = 2.0
MODERN, LEGACY = "2026-07-28", "2025-11-25"
LIST_CHANGED = "notifications/tools/list_changed"
META = "io.modelcontextprotocol/"
METRICS_TOKEN = secrets.token_urlsafe(16)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--bus", choices=["postgresql", "redis"], default="postgresql")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--role", choices=["setup", "staff"], help=argparse.SUPPRESS)
    return parser.parse_args()


# -- The database, the tenant, the server -------------------------------------


def maintenance(pg: str, sql: str) -> None:
    with psycopg.connect(f"{pg}/postgres", autocommit=True) as conn:
        conn.execute(sql.encode())


def django_env(options: argparse.Namespace, db_url: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": db_url,
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(48),
        "MCP_BUS": options.bus,
    }
    if options.bus == "redis":
        env["CACHE_URL"] = options.redis
    return env


def setup() -> None:
    """Migrate, create the tenant, its member and tool; print a token."""
    import io

    import django

    django.setup()
    from django.core.management import call_command

    def command(*args: str) -> str:
        out = io.StringIO()
        call_command(*args, stdout=out)
        return out.getvalue().strip()

    call_command("migrate", verbosity=0)
    command("mcp_tenant", "create", SLUG)
    command("mcp_tenant", "add-member", SLUG, "staff", "--create-user")
    command("mcp_expose", SLUG, "demo.echo")
    print(command("mcp_token", "create", SLUG, "--user", "staff"))


def create_tenant(env: dict[str, str]) -> str:
    """``setup`` in a process of its own (this one stays free of Django)."""
    done = subprocess.run(  # noqa: S603 - this script, in another role
        [sys.executable, __file__, "--role", "setup"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip().splitlines()[-1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def start_uvicorn(
    env: dict[str, str], port: int, streams: int, tmp: Path
) -> subprocess.Popen[bytes]:
    server_env = {
        **env,
        "MCP_MAX_LISTENERS_PER_TENANT": str(max(streams, 100)),
        "MCP_METRICS_TOKEN": METRICS_TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp / "prometheus"),
    }
    (tmp / "prometheus").mkdir()
    args = [str(BIN / "uvicorn"), "config.asgi:application", "--host", HOST]
    args += ["--port", str(port), "--workers", "2", "--loop", "uvloop"]
    args += ["--http", "httptools", "--log-level", "warning", "--no-access-log"]
    with (tmp / "uvicorn.log").open("wb") as log:
        return subprocess.Popen(  # noqa: S603 - our own fixed command
            args, cwd=ROOT, env=server_env, stdout=log, stderr=log
        )


def workers_of(master: int) -> list[int]:
    """The master's child processes that serve (not multiprocessing helpers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == master and b"resource_tracker" not in cmdline:
            found.append(int(entry.name))
    return sorted(found)


def wait_ready(server: subprocess.Popen[bytes], port: int) -> list[int]:
    """Wait until both workers answer; return their pids."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        workers = workers_of(server.pid)
        if len(workers) == 2 and _answers(port):
            for _ in range(8):  # pay cold imports in both workers, uncounted
                _answers(port)
            return workers
        time.sleep(0.2)
    raise RuntimeError("uvicorn did not start")


def _answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=5) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            sock.sendall(b"Connection: close\r\n\r\n")
            return sock.recv(12).startswith(b"HTTP/1.1")
    except OSError:
        return False


# -- What /proc says about the workers ----------------------------------------


def rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        status = Path(f"/proc/{pid}/status").read_text()
        match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        total += int(match.group(1)) if match else 0
    return total


def socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def peers_by_inode(port: int) -> dict[int, int]:
    """Established server-side sockets on ``port``: inode -> the client's port."""
    peers = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                peers[int(inode)] = int(remote.rsplit(":", 1)[1], 16)
    return peers


def worker_by_client_port(port: int, workers: list[int]) -> dict[int, int]:
    peers = peers_by_inode(port)
    found = {}
    for pid in workers:
        for inode in socket_inodes(pid) & peers.keys():
            found[peers[inode]] = pid
    return found


# -- The streams ---------------------------------------------------------------


@dataclass
class Stream:
    index: int
    modern: bool
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    arrivals: list[int] = field(default_factory=list)
    """Monotonic ns at which each ``list_changed`` arrived."""
    other: Counter[str] = field(default_factory=Counter)
    ended: str = ""
    task: asyncio.Task[None] | None = None

    @property
    def client_port(self) -> int:
        return int(self.writer.get_extra_info("sockname")[1])


def request_bytes(index: int, modern: bool, port: int, token: str) -> bytes:
    head = [f"Host: {HOST}:{port}", f"Authorization: Bearer {token}"]
    if not modern:
        head += ["Accept: text/event-stream", f"MCP-Protocol-Version: {LEGACY}"]
        lines = [f"GET /t/{SLUG}/mcp HTTP/1.1", *head]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()
    body = json.dumps(listen_body(index)).encode()
    head += [
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        f"MCP-Protocol-Version: {MODERN}",
        "Mcp-Method: subscriptions/listen",
        f"Content-Length: {len(body)}",
    ]
    lines = [f"POST /t/{SLUG}/mcp HTTP/1.1", *head]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def listen_body(index: int) -> dict[str, Any]:
    meta = {
        f"{META}protocolVersion": MODERN,
        f"{META}clientInfo": {"name": "listen-soak", "version": "1"},
        f"{META}clientCapabilities": {},
    }
    return {
        "jsonrpc": "2.0",
        "id": f"sub-{index}",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": meta},
    }


async def open_stream(index: int, modern: bool, port: int, token: str) -> Stream:
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(request_bytes(index, modern, port, token))
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)).decode()
    status, headers = head.split("\r\n", 1)
    if " 200 " not in status or "text/event-stream" not in headers.lower():
        writer.close()
        raise RuntimeError(f"stream {index}: {status}")
    stream = Stream(index, modern, reader, writer)
    first = await asyncio.wait_for(_next_chunk(reader), 30)  # the opening frame
    _record(stream, first, time.monotonic_ns())
    stream.task = asyncio.create_task(_read(stream))
    return stream


async def _next_chunk(reader: asyncio.StreamReader) -> bytes:
    """One chunk of the chunked body (b"" at its end)."""
    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
    data = await reader.readexactly(size + 2)
    return data[:-2]


async def _read(stream: Stream) -> None:
    try:
        while chunk := await _next_chunk(stream.reader):
            _record(stream, chunk, time.monotonic_ns())
        stream.ended = "the server ended it"
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        stream.ended = stream.ended or type(exc).__name__


def _record(stream: Stream, chunk: bytes, at: int) -> None:
    for block in chunk.decode().split("\n\n"):
        data = [line[5:].strip() for line in block.splitlines() if line[:5] == "data:"]
        if not data:
            continue
        message = json.loads("\n".join(data))
        method = message.get("method", "result")
        if method == LIST_CHANGED:
            stream.arrivals.append(at)
        else:
            stream.other[method] += 1


async def open_streams(
    first: int, count: int, port: int, token: str, batch: int = 20
) -> list[Stream]:
    opened: list[Stream] = []
    for start in range(first, first + count, batch):
        indexes = range(start, min(start + batch, first + count))
        opened += await asyncio.gather(
            *(open_stream(i, i % 2 == 0, port, token) for i in indexes)
        )
    return opened


async def close_streams(streams: list[Stream]) -> None:
    for stream in streams:
        stream.ended = stream.ended or "closed by the client"
        stream.writer.close()
    await asyncio.gather(*(s.task for s in streams if s.task), return_exceptions=True)


# -- The staff process ----------------------------------------------------------


def staff(seconds: float) -> None:
    """Toggle ``demo.add`` on the tenant; print each commit's clock."""
    import django

    django.setup()
    from django.db import transaction

    from mcp_gateway import bookkeeping
    from mcp_gateway.models import Tenant

    tenant = Tenant.objects.get(slug=SLUG)
    print("ready", flush=True)
    sys.stdin.readline()
    commits: dict[str, list[int]] = {"isolated": [], "burst": []}
    exposed = False

    def change(phase: str) -> None:
        nonlocal exposed
        with transaction.atomic():
            if exposed:
                bookkeeping.unexpose(tenant, TOGGLED)
            else:
                bookkeeping.expose(tenant, TOGGLED)
            commits[phase].append(time.monotonic_ns())  # the COMMIT comes next
        exposed = not exposed

    for _ in range(ISOLATED):
        change("isolated")
        time.sleep(ISOLATED_GAP)
    start, ticks = time.monotonic(), 0
    while time.monotonic() < start + seconds:
        change("burst")
        ticks += 1
        time.sleep(max(0.0, start + ticks * TICK - time.monotonic()))
    print(json.dumps(commits), flush=True)


def start_staff(env: dict[str, str], seconds: float) -> subprocess.Popen[str]:
    process = subprocess.Popen(  # noqa: S603 - this script, in another role
        [sys.executable, __file__, "--role", "staff", "--seconds", str(seconds)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    if process.stdout is None or process.stdout.readline().strip() != "ready":
        raise RuntimeError("the staff process did not start")
    return process


# -- The run --------------------------------------------------------------------


@dataclass
class Measured:
    streams: int = 0
    opened: list[Stream] = field(default_factory=list)
    by_worker: Counter[int] = field(default_factory=Counter)
    warm_by_worker: Counter[int] = field(default_factory=Counter)
    rss: dict[str, int] = field(default_factory=dict)
    gauge: dict[str, dict[str, float]] = field(default_factory=dict)
    sockets: dict[str, int] = field(default_factory=dict)
    commits: dict[str, list[int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def open_stream_gauge(port: int) -> dict[str, float]:
    """``mcp_gateway_open_streams``: the tenant's series, and every series."""
    with socket.create_connection((HOST, port), timeout=10) as sock:
        sock.sendall(
            f"GET /metrics HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n"
            f"Authorization: Bearer {METRICS_TOKEN}\r\n\r\n".encode()
        )
        body = b""
        while data := sock.recv(65536):
            body += data
    pattern = r'^mcp_gateway_open_streams\{tenant="([^"]*)"\} ([0-9.e+-]+)$'
    series = re.findall(pattern, body.decode(), re.MULTILINE)
    return {
        SLUG: sum(float(v) for tenant, v in series if tenant == SLUG),
        "all": sum(float(v) for _, v in series),
    }


def socket_count(port: int, workers: list[int]) -> int:
    """Connections the workers hold on ``port`` (the metrics scrape's aside)."""
    return len(worker_by_client_port(port, workers))


async def drive(
    options: argparse.Namespace, env: dict[str, str], port: int, workers: list[int]
) -> Measured:
    token, out = env["LIVE_TOKEN"], Measured(streams=options.streams)
    out.rss["before"] = rss_kb(workers)
    out.sockets["before"] = socket_count(port, workers)
    out.gauge["before"] = open_stream_gauge(port)
    warm = min(WARM, options.streams)
    out.opened = await open_streams(0, warm, port, token)
    await asyncio.sleep(SETTLE)
    out.warm_by_worker = count_workers(out.opened, port, workers)
    out.rss["warm"] = rss_kb(workers)
    out.opened += await open_streams(warm, options.streams - warm, port, token)
    await asyncio.sleep(SETTLE)
    out.rss["open"] = rss_kb(workers)
    out.sockets["open"] = socket_count(port, workers)
    out.by_worker = count_workers(out.opened, port, workers)
    out.gauge["open"] = open_stream_gauge(port)
    staff_process = start_staff(env, options.seconds)
    assert staff_process.stdin is not None  # noqa: S101 - opened above
    staff_process.stdin.write("go\n")
    staff_process.stdin.flush()
    text, _ = await asyncio.to_thread(staff_process.communicate, timeout=600)
    out.commits = json.loads(text.strip().splitlines()[-1])
    await asyncio.sleep(DEADLINE + COALESCE)
    out.problems += [f"stream {s.index}: {s.ended}" for s in out.opened if s.ended]
    await close_streams(out.opened)
    await wait_back(out, port, workers)
    return out


def count_workers(streams: list[Stream], port: int, workers: list[int]) -> Counter[int]:
    where = worker_by_client_port(port, workers)
    return Counter(where.get(s.client_port, 0) for s in streams)


async def wait_back(out: Measured, port: int, workers: list[int]) -> None:
    """Wait (10 s at most) for the gauge and socket counts to drop back."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out.gauge["closed"] = open_stream_gauge(port)
        out.sockets["closed"] = socket_count(port, workers)
        back = out.gauge["closed"]["all"] <= out.gauge["before"]["all"]
        if back and out.sockets["closed"] <= out.sockets["before"]:
            return
        await asyncio.sleep(0.2)


# -- The figures ----------------------------------------------------------------


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def latencies(commits: list[int], streams: list[Stream]) -> tuple[list[float], int]:
    """Commit to each stream's next notification, ms; and the misses (> DEADLINE)."""
    found, missed = [], 0
    for stream in streams:
        arrivals = stream.arrivals
        for commit in commits:
            later = [a for a in arrivals if a >= commit]
            gap = (later[0] - commit) / 1e6 if later else math.inf
            if gap > DEADLINE * 1000:
                missed += 1
            else:
                found.append(gap)
    return found, missed


def longest_silence(commits: list[int], stream: Stream) -> float:
    """The longest wait (s) for a notification while the burst lasted."""
    first, last = commits[0], commits[-1]
    marks = [first, *(a for a in stream.arrivals if first <= a <= last), last]
    later = [a for a in stream.arrivals if a >= last]
    marks.append(later[0] if later else last + int(1e12))
    return max(b - a for a, b in itertools.pairwise(marks)) / 1e9


def notified_fractions(commits: list[int], streams: list[Stream]) -> list[float]:
    fractions = []
    for commit in commits:
        heard = sum(
            any(commit <= a <= commit + DEADLINE * 1e9 for a in s.arrivals)
            for s in streams
        )
        fractions.append(heard / len(streams))
    return fractions


def check(out: Measured, seconds: float) -> dict[str, Any]:
    streams, burst, isolated = out.opened, out.commits["burst"], out.commits["isolated"]
    figures: dict[str, Any] = {}
    figures["isolated"] = latencies(isolated, streams)
    figures["burst"] = latencies(burst, streams)
    figures["last"] = latencies(burst[-1:], streams)
    figures["silence"] = max(longest_silence(burst, s) for s in streams)
    figures["fractions"] = notified_fractions(burst, streams)
    in_burst = [sum(burst[0] <= a for a in s.arrivals) for s in streams]
    figures["per_stream"] = (min(in_burst), max(in_burst))
    figures["bound"] = math.ceil((burst[-1] - burst[0]) / 1e9 / COALESCE) + 2
    problems = out.problems
    if len(streams) != out.streams:
        problems.append(f"{len(streams)} of {out.streams} streams opened")
    if len([w for w in out.by_worker if w]) < 2 or out.by_worker.get(0):
        problems.append(f"streams by worker: {dict(out.by_worker)}")
    for name in ("isolated", "last"):
        if figures[name][1]:
            problems.append(f"{figures[name][1]} {name} notifications missed")
    if figures["silence"] > DEADLINE:
        problems.append(f"a stream waited {figures['silence']:.2f} s in the burst")
    if figures["per_stream"][1] > figures["bound"]:
        problems.append(f"{figures['per_stream'][1]} notifications > coalescing")
    opened = out.gauge.get("open", {"all": 0})["all"] - out.gauge["before"]["all"]
    if opened != len(streams):
        problems.append(f"open-stream gauge counts {opened:.0f} of {len(streams)}")
    if out.gauge.get("closed", {"all": 1})["all"] > out.gauge["before"]["all"]:
        problems.append(f"open-stream gauge after closing: {out.gauge}")
    if out.sockets.get("closed", 1 << 30) > out.sockets["before"]:
        problems.append(f"worker sockets after closing: {out.sockets}")
    return figures


def report(out: Measured, figures: dict[str, Any], options: argparse.Namespace) -> None:
    n, warm = out.streams, min(WARM, out.streams)
    burst = out.commits["burst"]
    print(f"bus: {options.bus}; streams: {n} (half {MODERN} listen, half {LEGACY} GET)")
    print(f"streams by worker pid: {dict(sorted(out.by_worker.items()))}")
    print(f"changes: {len(out.commits['isolated'])} isolated, {len(burst)} in burst")
    print()
    print(f"{'latency, commit to notification':<36}{'p50 ms':>9}{'p99 ms':>9}", end="")
    print(f"{'max ms':>9}{'samples':>9}{'missed':>8}")
    for label, key in (
        (f"isolated ({ISOLATED_GAP} s apart)", "isolated"),
        (f"burst (every {TICK * 1000:.0f} ms)", "burst"),
        ("last change of the burst", "last"),
    ):
        values, missed = figures[key]
        print(
            f"{label:<36}{percentile(values, 50):>9.1f}{percentile(values, 99):>9.1f}"
            f"{max(values, default=math.nan):>9.1f}{len(values):>9}{missed:>8}"
        )
    fractions = figures["fractions"]
    print()
    print(f"{'burst':<36}{'value':>12}")
    rows = [
        ("streams notified per change, min", f"{min(fractions):.3f}"),
        ("notifications per stream, min-max", "{}-{}".format(*figures["per_stream"])),
        ("coalescing bound per stream", str(figures["bound"])),
        ("longest silence in the burst, s", f"{figures['silence']:.2f}"),
    ]
    for label, value in rows:
        print(f"{label:<36}{value:>12}")
    print()
    print(f"{'workers (both)':<36}{'before':>10}{f'{warm} open':>10}", end="")
    print(f"{f'{n} open':>10}{'closed':>10}")
    rss = out.rss
    print(f"{'RSS kB':<36}{rss['before']:>10}{rss['warm']:>10}{rss['open']:>10}")
    sockets = out.sockets
    print(f"{'connections held':<36}{sockets['before']:>10}{'':>10}", end="")
    print(f"{sockets['open']:>10}", end="")
    print(f"{out.sockets.get('closed', -1):>10}")
    gauge = out.gauge
    for label, key in (
        ("open_streams{tenant=live}", SLUG),
        ("open_streams, every tenant", "all"),
    ):
        print(f"{label:<36}{gauge['before'][key]:>10.0f}{'':>10}", end="")
        print(f"{gauge['open'][key]:>10.0f}{gauge['closed'][key]:>10.0f}")
    print()
    per_warm = (rss["open"] - rss["warm"]) / max(1, n - warm)
    per_all = (rss["open"] - rss["before"]) / n
    print(f"RSS per idle stream: {per_warm:.1f} kB (streams {warm + 1}-{n}), ", end="")
    print(f"{per_all:.1f} kB (all {n}, first-use costs included)")


def run(options: argparse.Namespace, db_url: str, tmp: Path) -> int:
    env = django_env(options, db_url)
    env["LIVE_TOKEN"] = create_tenant(env)
    port = free_port()
    server = start_uvicorn(env, port, options.streams, tmp)
    try:
        workers = wait_ready(server, port)
        out = asyncio.run(drive(options, env, port, workers))
    except BaseException:
        print((tmp / "uvicorn.log").read_text()[-4000:], file=sys.stderr)
        raise
    finally:
        server.terminate()
        server.wait(timeout=30)
    figures = check(out, options.seconds)
    report(out, figures, options)
    for problem in out.problems[:20]:
        print(f"FAIL {problem}", file=sys.stderr)
    print(f"problems: {len(out.problems)}")
    return 1 if out.problems else 0


def main() -> int:
    options = parse_args()
    if options.role == "setup":
        setup()
        return 0
    if options.role == "staff":
        staff(options.seconds)
        return 0
    name = f"mcpgw_listen_{int(time.time())}_{os.getpid()}"
    maintenance(options.pg, f"CREATE DATABASE {name}")
    try:
        with tempfile.TemporaryDirectory(prefix="mcpgw-listen-") as tmp:
            return run(options, f"{options.pg}/{name}", Path(tmp))
    finally:
        maintenance(options.pg, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


if __name__ == "__main__":
    sys.exit(main())
