"""Run the side-by-side benchmark and print one table.

    .venv/bin/python benchmarks/run.py [--seconds 10] [--repeats 2]
        [--rows gateway-gunicorn,...] [--scenarios call-c1,...,scale]
        [--databases sqlite,postgres] [--scale-tenants 10000] [--out FILE]

Installs what it needs (wrk through apt-get, each peer in a throwaway
virtualenv under benchmarks/.work/), starts each server in turn on
127.0.0.1 with 2 worker processes, warms it, loads it with wrk for a bounded
time per scenario, repeats the whole set, and prints the medians.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import report, servers
from benchmarks.load import SCENARIOS, Scenario, ensure_wrk, headers, run_wrk
from benchmarks.report import NO_DB, Cell, Key, Table
from benchmarks.servers import ROWS, Database, Prepared, Row, Unavailable

SCALE = "scale"
SCALE_DB = "postgres-10k"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10, help="per measurement")
    parser.add_argument("--warmup", type=float, default=2, help="per scenario")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--scenarios", default=",".join([*SCENARIOS, SCALE]))
    parser.add_argument("--databases", default="postgres,sqlite")
    parser.add_argument("--scale-tenants", type=int, default=10_000)
    parser.add_argument("--scale-exposures", type=int, default=100)
    parser.add_argument("--out", type=Path, help="also write the report here")
    return parser.parse_args(argv)


def _list(value: str, known: object) -> list[str]:
    names = [name for name in value.split(",") if name]
    unknown = [name for name in names if name not in known]  # type: ignore[operator]
    if unknown:
        raise SystemExit(f"unknown: {', '.join(unknown)}")
    return names


def databases(args: argparse.Namespace, scenarios: list[str]) -> list[Database]:
    chosen = [Database(name, seed_tenants=10) for name in args.databases.split(",")]
    if SCALE in scenarios:
        chosen.append(
            Database(SCALE_DB, args.scale_tenants, seed_exposures=args.scale_exposures)
        )
    return chosen


def plan(row: Row, database: Database | None, scenarios: list[str]) -> list[Scenario]:
    """The scenarios a row runs against a database (the scale DB: one)."""
    if database is not None and database.name == SCALE_DB:
        return [SCENARIOS["call-c16"]] if row.family == "gateway" else []
    return [SCENARIOS[name] for name in scenarios if name in SCENARIOS]


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows = [ROWS[name] for name in _list(args.rows, ROWS)]
        self.scenarios = _list(args.scenarios, [*SCENARIOS, SCALE])
        self.databases = databases(args, self.scenarios)
        self.secret = secrets.token_urlsafe(48)
        self.table: Table = {}
        self.prepared: dict[tuple[str, str], Prepared] = {}
        self.broken: dict[str, str] = {}
        self.wrk = ensure_wrk()

    def install(self) -> None:
        servers.WORK.mkdir(parents=True, exist_ok=True)
        for row in self.rows:
            if row.venv is None or row.venv in self.broken:
                continue
            try:
                servers.ensure_venv(row.venv)
            except Unavailable as exc:
                self.broken[row.venv] = str(exc)

    def prepare(self) -> None:
        families = {row.family: row for row in self.rows if row.uses_db}
        for database in self.databases:
            for family, row in families.items():
                if not plan(row, database, self.scenarios):
                    continue
                if row.venv in self.broken:
                    continue
                self.prepared[(family, database.name)] = servers.prepare(
                    row, database, self.secret
                )

    def run(self) -> None:
        for repeat in range(self.args.repeats):
            print(f"[run] repeat {repeat + 1}/{self.args.repeats}", flush=True)
            for row in self.rows:
                for database in self.databases if row.uses_db else [None]:
                    self.run_row(row, database, repeat)

    def run_row(self, row: Row, database: Database | None, repeat: int) -> None:
        scenarios = plan(row, database, self.scenarios)
        if not scenarios:
            return
        db_name = database.name if database else NO_DB
        keys = [Key(row.name, db_name, s.name) for s in scenarios]
        reason = self.reason(row, db_name)
        if reason is not None:
            self.mark(keys, reason)
            return
        prepared = self.prepared.get((row.family, db_name), Prepared())
        url = database.url(row.family) if database else None
        env = servers.environment(row, url, self.secret)
        print(f"[run]   {row.name} {db_name}", flush=True)
        try:
            with servers.running(row, env, f"{db_name}-{repeat}") as server:
                for scenario in scenarios:
                    self.measure(
                        server,
                        scenario,
                        prepared,
                        Key(row.name, db_name, scenario.name),
                    )
                rss = servers.worker_rss_kib(server)
                for key in keys:
                    self.table[key].rss_kib = rss
        except Unavailable as exc:
            self.mark(keys, str(exc))

    def reason(self, row: Row, db_name: str) -> str | None:
        if row.venv in self.broken:
            return self.broken[row.venv or ""]
        prepared = self.prepared.get((row.family, db_name))
        return prepared.error if prepared is not None else None

    def measure(
        self, server: servers.Running, scenario: Scenario, prepared: Prepared, key: Key
    ) -> None:
        token = prepared.tokens.get(scenario.slug)
        body = scenario.body()
        servers.probe(server, scenario.slug, body, headers(token))
        url = server.url(scenario.slug)
        if self.args.warmup > 0:
            run_wrk(self.wrk, url, scenario, token, self.args.warmup)
        cpu_before = servers.cpu_seconds(server)
        result = run_wrk(self.wrk, url, scenario, token, self.args.seconds)
        cpu = servers.cpu_seconds(server) - cpu_before
        cell = self.table.setdefault(key, Cell(results=[]))
        cell.results.append(result)
        cell.cpu_us.append(cpu * 1e6 / result.requests if result.requests else 0.0)
        cell.load.append(load_average())
        cell.unavailable = None
        note = f"  first error: {result.sample}" if result.errors else ""
        print(
            f"[run]     {scenario.name}: {result.rps:,.0f} req/s, "
            f"p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, "
            f"{cell.cpu_us[-1]:,.0f} µs CPU/request, load {cell.load[-1]:.2f}, "
            f"{result.errors} errors{note}",
            flush=True,
        )

    def mark(self, keys: list[Key], reason: str) -> None:
        print(f"[run]     unavailable: {reason}", flush=True)
        for key in keys:
            cell = self.table.setdefault(key, Cell(results=[]))
            if not cell.results:
                cell.unavailable = reason


def load_average() -> float:
    """The machine's 1-minute load average now (/proc/loadavg)."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def machine(load_at_start: str) -> list[str]:
    def out(*command: str) -> str:
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
        return (
            (done.stdout or done.stderr).strip().splitlines()[0]
            if done.stdout or done.stderr
            else "?"
        )

    load = Path("/proc/loadavg").read_text().split()[:3]
    return [
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}",
        f"- `uname -a`: {out('uname', '-a')}",
        f"- nproc: {out('nproc')}; load average (1, 5, 15 min) at the start: "
        f"{load_at_start}; at the end: {' '.join(load)}",
        f"- Python {platform.python_version()}; {out('wrk', '--version')}",
        f"- PostgreSQL: {out('psql', '--version')}",
    ]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # Unwind on SIGTERM too, so every server started is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    load_at_start = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    runner = Runner(args)
    runner.install()
    runner.prepare()
    runner.run()
    scenario_order = [*SCENARIOS]
    flags = " ".join(sys.argv[1:] if argv is None else argv)
    wall = time.monotonic() - started
    text = "\n".join(
        [
            *machine(load_at_start),
            f"- command: `python benchmarks/run.py {flags}`",
            f"- {args.seconds:g} s per measurement after {args.warmup:g} s of "
            f"warm-up, {args.repeats} repeats (medians), wall time {wall:.0f} s",
            "",
            report.render(
                runner.table, [row.name for row in runner.rows], scenario_order
            ),
            "",
            report.LEGEND,
            "",
            "Targets (gateway under gunicorn, PostgreSQL, API-token auth on):",
            "",
            *report.targets(runner.table),
            "",
            "Targets of the README defaults (gateway-gunicorn-readme: PostgreSQL,"
            " API-token auth, audit log on):",
            "",
            *report.readme_targets(runner.table),
            "",
            "The README defaults against the code before the work on fast"
            " defaults (gateway-gunicorn-before, the same deployment):",
            "",
            *report.before_after(runner.table),
        ]
    )
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
