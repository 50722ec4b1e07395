"""Aggregate repeated measurements into one table and check the targets."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from benchmarks.load import Result

NO_DB = "-"


@dataclass(frozen=True)
class Key:
    row: str
    database: str
    scenario: str


@dataclass
class Cell:
    results: list[Result]
    rss_kib: int | None = None
    unavailable: str | None = None
    cpu_us: list[float] = field(default_factory=list)  # server CPU per request
    load: list[float] = field(default_factory=list)  # 1-min load after each run

    @property
    def rps(self) -> float:
        return statistics.median(r.rps for r in self.results) if self.results else 0.0

    def latency(self, which: str) -> float:
        return float(statistics.median(getattr(r, which) for r in self.results))

    @property
    def cpu(self) -> float | None:
        return statistics.median(self.cpu_us) if self.cpu_us else None

    @property
    def errors(self) -> int:
        return sum(r.errors for r in self.results)


Table = dict[Key, Cell]


def ceiling_rps(table: Table, scenario: str) -> float | None:
    cell = table.get(Key("ceiling", NO_DB, scenario))
    return cell.rps if cell and cell.results else None


def render(table: Table, rows: Sequence[str], scenarios: Sequence[str]) -> str:
    """A Markdown table: one line per (scenario, server, database)."""
    lines = [
        "| scenario | server | db | req/s | p50 ms | p99 ms | errors "
        "| x ceiling | server CPU µs/req | x ceiling CPU | worker RSS MiB | load |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scenario in scenarios:
        for key in _keys(table, rows, scenario):
            lines.append(_line(table, key))
    return "\n".join(lines)


def _keys(table: Table, rows: Sequence[str], scenario: str) -> Iterable[Key]:
    order = {name: index for index, name in enumerate(rows)}
    keys = [key for key in table if key.scenario == scenario]
    return sorted(keys, key=lambda k: (order.get(k.row, 99), k.database))


def _line(table: Table, key: Key) -> str:
    cell = table[key]
    scenario = key.scenario.split("@")[0]
    if cell.unavailable or not cell.results:
        reason = (cell.unavailable or "no result").replace("|", "/")[:160]
        return (
            f"| {key.scenario} | {key.row} | {key.database} | unavailable: {reason} |"
        )
    if cell.rps == 0:
        return f"| {key.scenario} | {key.row} | {key.database} | no request completed |"
    ceiling = ceiling_rps(table, scenario)
    ratio = f"{cell.rps / ceiling:.2f}" if ceiling else "-"
    rss = f"{cell.rss_kib / 1024:.0f}" if cell.rss_kib else "-"
    cpu = f"{cell.cpu:,.0f}" if cell.cpu is not None else "-"
    ceiling_cpu = _cpu(table, Key("ceiling", NO_DB, scenario))
    cpu_ratio = f"{cell.cpu / ceiling_cpu:.2f}" if cell.cpu and ceiling_cpu else "-"
    load = "/".join(f"{value:.1f}" for value in cell.load) or "-"
    return (
        f"| {key.scenario} | {key.row} | {key.database} | {cell.rps:,.0f} "
        f"| {cell.latency('p50_ms'):.2f} | {cell.latency('p99_ms'):.2f} "
        f"| {cell.errors} | {ratio} | {cpu} | {cpu_ratio} | {rss} | {load} |"
    )


LEGEND = (
    "`server CPU µs/req`: user + system CPU of the server's processes (master"
    " and workers, every thread; /proc/<pid>/stat) during the measurement over"
    " the requests it answered, median of the repeats; the database server's"
    " own CPU is not in it. `load`: the machine's 1-minute load average after"
    " each repeat's measurement (/proc/loadavg)."
)


def _cpu(table: Table, key: Key) -> float | None:
    cell = table.get(key)
    return cell.cpu if cell and cell.results else None


# -- Targets ------------------------------------------------------------------

GATEWAY = "gateway-gunicorn"
PG = "postgres"


def targets(table: Table) -> list[str]:
    """Each target of the issue: met, not met, or not measured."""
    out = []
    for scenario in ("call-c16", "list10"):
        gw = _rps(table, Key(GATEWAY, PG, scenario))
        out.append(
            _check(
                f"{scenario}: gateway ≥ 1.0x django-mcpz (PG, tokens on, audit off)",
                gw,
                _rps(table, Key("django-mcpz", PG, scenario)),
                1.0,
            )
        )
        out.append(
            _check(
                f"{scenario}: gateway ≥ 0.75x ceiling (PG)",
                gw,
                ceiling_rps(table, scenario),
                0.75,
            )
        )
    out.append(
        _check(
            "list200: gateway ≥ 0.5x ceiling's list10 (PG)",
            _rps(table, Key(GATEWAY, PG, "list200")),
            ceiling_rps(table, "list10"),
            0.5,
        )
    )
    out.append(
        _check(
            "call-c16: 10,000 tenants within 10 % of 10 tenants (PG)",
            _rps(table, Key(GATEWAY, "postgres-10k", "call-c16")),
            _rps(table, Key(GATEWAY, PG, "call-c16")),
            0.9,
        )
    )
    for scenario in ("call-c1", "call-c16"):
        out.append(
            _check(
                f"{scenario}: audit on (AUDIT_DURABILITY async) ≥ 0.9x audit off (PG)",
                _rps(table, Key(f"{GATEWAY}-audit", PG, scenario)),
                _rps(table, Key(GATEWAY, PG, scenario)),
                0.9,
            )
        )
    errors = sum(
        cell.errors for key, cell in table.items() if key.row.startswith("gateway")
    )
    out.append(
        f"- gateway rows with 0 errors: {'met' if errors == 0 else 'NOT met'}"
        f" ({errors} errors)"
    )
    return out


README = "gateway-gunicorn-readme"


def readme_targets(table: Table) -> list[str]:
    """The README defaults' targets: against django-mcpz with its database
    tokens, the physical limit and the no-DB ceiling, CPU and c=1 latency."""
    out = []
    for scenario in ("call-c16", "list10"):
        gw = _rps(table, Key(README, PG, scenario))
        for label, base, ratio in (
            ("django-mcpz (DB tokens)", Key("django-mcpz", PG, scenario), 1.0),
            ("physical-limit", Key("physical-limit", PG, scenario), 0.9),
            ("ceiling", Key("ceiling", NO_DB, scenario), 0.5),
        ):
            out.append(
                _check(
                    f"{scenario}: README defaults ≥ {ratio:.1f}x {label}",
                    gw,
                    _rps(table, base),
                    ratio,
                )
            )
    for scenario in ("call-c16", "list10", "call-c1"):
        gw_cpu = _cpu(table, Key(README, PG, scenario))
        ceiling = _cpu(table, Key("ceiling", NO_DB, scenario))
        if gw_cpu is None or not ceiling:
            out.append(f"- {scenario}: server CPU ≤ 1.5x the ceiling's: not measured")
            continue
        verdict = "met" if gw_cpu <= 1.5 * ceiling else "NOT met"
        out.append(
            f"- {scenario}: server CPU per request ≤ 1.5x the ceiling's: {verdict}"
            f" ({gw_cpu:,.0f} µs against {ceiling:,.0f} µs, {gw_cpu / ceiling:.2f}x)"
        )
    gw_cell = table.get(Key(README, PG, "call-c1"))
    ceiling_cell = table.get(Key("ceiling", NO_DB, "call-c1"))
    if gw_cell and gw_cell.results and ceiling_cell and ceiling_cell.results:
        gap = gw_cell.latency("p50_ms") - ceiling_cell.latency("p50_ms")
        verdict = "met" if gap <= 0.3 else "NOT met"
        out.append(
            f"- call-c1: p50 within 0.3 ms of the ceiling's: {verdict} (+{gap:.2f} ms)"
        )
    else:
        out.append("- call-c1: p50 within 0.3 ms of the ceiling's: not measured")
    sdk = _rps(table, Key("mcp-sdk", NO_DB, "call-c16"))
    out.append(
        _check(
            "call-c16: gateway-uvicorn-readme ≥ 0.7x mcp-sdk under uvicorn (PG)",
            _rps(table, Key("gateway-uvicorn-readme", PG, "call-c16")),
            sdk,
            0.7,
        )
    )
    return out


BEFORE = "gateway-gunicorn-before"


def before_after(table: Table) -> list[str]:
    """Per scenario, the README defaults' req/s, CPU and p50 beside the
    same deployment of the code before the work on fast defaults."""
    out = []
    for scenario in ("call-c1", "call-c16", "list10"):
        now = table.get(Key(README, PG, scenario))
        then = table.get(Key(BEFORE, PG, scenario))
        if not (now and now.results and then and then.results and then.rps):
            out.append(f"- {scenario}: not measured")
            continue
        out.append(
            f"- {scenario}: {then.rps:,.0f} → {now.rps:,.0f} req/s"
            f" ({now.rps / then.rps:.2f}x); server CPU {_us(then.cpu)} →"
            f" {_us(now.cpu)} µs/req; p50 {then.latency('p50_ms'):.2f} →"
            f" {now.latency('p50_ms'):.2f} ms"
        )
    return out


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _rps(table: Table, key: Key) -> float | None:
    cell = table.get(key)
    return cell.rps if cell and cell.results else None


def _check(label: str, value: float | None, base: float | None, ratio: float) -> str:
    """``value >= ratio * base``; a ratio under 1 with "within" is two-sided."""
    if value is None or not base:
        return f"- {label}: not measured"
    met = value >= ratio * base
    if "within" in label:
        met = abs(value / base - 1) <= 1 - ratio
    verdict = "met" if met else "NOT met"
    return f"- {label}: {verdict} ({value / base:.2f}x)"
