"""The benchmarked servers: how each is installed, set up, started, measured."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / ".work"
PROJECT_BIN = Path(sys.executable).parent
PG = "postgres://postgres@127.0.0.1:5432"
WORKERS = "2"


class Unavailable(Exception):
    """A row cannot be installed, set up or started; the message says why."""


@dataclass(frozen=True)
class Row:
    name: str
    server: str  # "gunicorn" (sync workers) or "uvicorn"
    app: str
    settings: str | None = None
    venv: str | None = None  # None: the project's own virtualenv
    family: str = ""  # rows of one family share a database set-up
    uses_db: bool = False
    env: tuple[tuple[str, str], ...] = ()  # the row's own settings
    # The database URL's query; None: none at all (the settings' defaults).
    db_query: str | None = "conn_max_age=600"
    # A commit of this repository the row runs instead of the working tree
    # (its own code, settings and set-up script, in its own database).
    revision: str | None = None


def _gateway(name: str, server: str, *, audit: bool, durability: str = "async") -> Row:
    """The gateway with the audit log as given, persistent connections."""
    audit_calls = ("MCP_AUDIT_CALLS", "true" if audit else "false")
    return _row(name, server, (audit_calls, ("MCP_AUDIT_DURABILITY", durability)))


def _readme(name: str, server: str, *, off: str | None = None) -> Row:
    """The README's deployment under ``server``: a DATABASE_URL without
    options, every MCP_GATEWAY setting at its default but the env var
    ``off`` (a fast path's) set to false."""
    return _row(name, server, () if off is None else ((off, "false"),), None)


def _row(
    name: str,
    server: str,
    env: tuple[tuple[str, str], ...],
    db_query: str | None = "conn_max_age=600",
) -> Row:
    app = {"gunicorn": "config.wsgi:application", "uvicorn": "config.asgi:application"}
    return Row(
        name,
        server,
        app[server],
        "config.settings",
        family="gateway",
        uses_db=True,
        env=env,
        db_query=db_query,
    )


BEFORE = "30920ea43a0bb6941f3b74cb5a4907769a805e61"
"""The last commit before the work on fast defaults: Django's connection
per request on PostgreSQL, the audit row's durable commit, no principal
cache, no fast paths."""


def _before(name: str) -> Row:
    """The README's gunicorn deployment as :data:`BEFORE` had it."""
    return Row(
        name,
        "gunicorn",
        "config.wsgi:application",
        "config.settings",
        family="before",
        uses_db=True,
        db_query=None,
        revision=BEFORE,
    )


def _mcpz(name: str, *, auth: bool) -> Row:
    return Row(
        name,
        "gunicorn",
        "benchmarks.peers.mcpz_site.wsgi:application",
        "benchmarks.peers.mcpz_site.settings",
        venv="mcpz",
        family="mcpz",
        uses_db=True,
        env=() if auth else (("BENCH_MCPZ_AUTH", "none"),),
    )


ROWS = {
    row.name: row
    for row in (
        # The README's deployment as it stands: `gunicorn config.wsgi`, a
        # DATABASE_URL without options, every MCP_GATEWAY setting at its
        # default (audit log on, AUDIT_DURABILITY "async", API tokens).
        _readme("gateway-gunicorn-readme", "gunicorn"),
        # The same deployment of the code before the work on fast defaults.
        _before("gateway-gunicorn-before"),
        _gateway("gateway-gunicorn", "gunicorn", audit=False),
        _gateway("gateway-gunicorn-audit", "gunicorn", audit=True),
        _gateway(
            "gateway-gunicorn-audit-durable",
            "gunicorn",
            audit=True,
            durability="durable",
        ),
        _gateway("gateway-uvicorn", "uvicorn", audit=False),
        # The README's other deployment: `uvicorn config.asgi:application`, a
        # DATABASE_URL without options (psycopg's pool, the ASGI default),
        # every MCP_GATEWAY setting at its default.
        _readme("gateway-uvicorn-readme", "uvicorn"),
        # The same with the ASGI fast path off: the mount through Django's
        # handler and the whole middleware chain, as before the fast path.
        _readme("gateway-uvicorn-chain", "uvicorn", off="MCP_ASGI_FAST_PATH"),
        # The same with the loop's answers off: a warm request's first hop
        # (admission, answer, audit INSERT) in its request thread.
        _readme("gateway-uvicorn-threads", "uvicorn", off="MCP_ASGI_LOOP_ANSWERS"),
        # The README's gunicorn deployment with the WSGI fast path off: the
        # mount through the site's handler and its whole middleware chain.
        _readme("gateway-gunicorn-chain", "gunicorn", off="MCP_WSGI_FAST_PATH"),
        Row(
            "ceiling",
            "gunicorn",
            "benchmarks.ceiling.wsgi:application",
            "benchmarks.ceiling.settings",
        ),
        # The ceiling plus the gateway's unavoidable warm database work: one
        # audit-like INSERT per tools/call, committed as AUDIT_DURABILITY
        # "async" commits (benchmarks/ceiling/limit.py).
        Row(
            "physical-limit",
            "gunicorn",
            "benchmarks.ceiling.wsgi:application",
            "benchmarks.ceiling.limit_settings",
            family="limit",
            uses_db=True,
        ),
        _mcpz("django-mcpz", auth=True),
        _mcpz("django-mcpz-noauth", auth=False),
        Row("mcp-sdk", "uvicorn", "benchmarks.peers.sdk_app:app", venv="sdk"),
        Row(
            "django-mcp-server",
            "gunicorn",
            "benchmarks.peers.dms_site.wsgi:application",
            "benchmarks.peers.dms_site.settings",
            venv="dms",
        ),
    )
}

VENVS = {
    "mcpz": [
        "django-mcpz==1.2.0",
        "Django==5.2.19",
        "gunicorn==27.0.1",
        "psycopg[binary]==3.3.9",
    ],
    # uvloop, as the gateway's uvicorn rows have: the same server settings.
    "sdk": ["mcp==2.3.0", "uvicorn==0.54.0", "uvloop==0.23.0"],
    # django-mcp-server imports FastMCP, which mcp 2.x renamed.
    "dms": [
        "django-mcp-server==0.5.7",
        "mcp==1.30.0",
        "Django==5.2.19",
        "gunicorn==27.0.1",
    ],
}


@dataclass(frozen=True)
class Database:
    """One database variant: its name, and filler tenants for the gateway."""

    name: str
    seed_tenants: int
    seed_exposures: int = 100

    def url(self, family: str) -> str:
        """The database's URL, without options (a row adds its own)."""
        if self.name == "sqlite":
            return f"sqlite:///{WORK / f'{family}.sqlite3'}"
        suffix = self.name.replace("-", "_")
        return f"{PG}/bench_{family}_{suffix}"


@dataclass
class Prepared:
    """Credentials per mount for a (family, database), or why not."""

    tokens: dict[str, str] = field(default_factory=dict)
    error: str | None = None


# -- Installation -------------------------------------------------------------


def source(row: Row) -> Path:
    """The tree the row's server runs from: the working tree, or its
    revision's files exported once under ``benchmarks/.work``.

    Raises:
        Unavailable: the revision cannot be exported (not in this clone).
    """
    if row.revision is None:
        return ROOT
    tree = WORK / f"tree-{row.revision[:12]}"
    done = tree / ".bench-exported"
    if not done.exists():
        print(f"[setup] exporting {row.revision[:12]} for {row.name}", flush=True)
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        archive = _run_bytes(["git", "-C", str(ROOT), "archive", row.revision], "git")
        _run(["tar", "-x", "-C", str(tree)], "tar", stdin=archive)
        done.touch()
    return tree


def bin_dir(row: Row) -> Path:
    return PROJECT_BIN if row.venv is None else WORK / row.venv / "bin"


def ensure_venv(name: str) -> None:
    """Create the peer's throwaway virtualenv unless it is already there.

    Raises:
        Unavailable: the virtualenv or its packages cannot be installed.
    """
    home = WORK / name
    marker = home / ".bench-requirements"
    wanted = "\n".join(VENVS[name])
    if marker.exists() and marker.read_text() == wanted:
        return
    print(f"[setup] installing {name}: {' '.join(VENVS[name])}", flush=True)
    _run([sys.executable, "-m", "venv", "--clear", str(home)], "virtualenv")
    _run([str(home / "bin" / "pip"), "install", "-q", *VENVS[name]], "pip install")
    marker.write_text(wanted)


def _run(
    command: list[str],
    what: str,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> str:
    return _run_bytes(command, what, env, stdin).decode(errors="replace")


def _run_bytes(
    command: list[str],
    what: str,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> bytes:
    done = subprocess.run(  # noqa: S603 - our own fixed commands
        command, capture_output=True, input=stdin, check=False, env=env
    )
    if done.returncode != 0:
        output = (done.stderr or done.stdout).decode(errors="replace")
        tail = output.strip().splitlines()[-3:]
        raise Unavailable(f"{what} failed: {' | '.join(tail)}")
    return done.stdout


# -- Databases and credentials ------------------------------------------------


def fresh_database(url: str) -> None:
    """Drop and create a PostgreSQL database, or delete a SQLite file."""
    if url.startswith("sqlite:"):
        Path(url.split("?")[0].removeprefix("sqlite:///")).unlink(missing_ok=True)
        return
    name = url.split("?")[0].rsplit("/", 1)[1]
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def environment(row: Row, db_url: str | None, secret: str) -> dict[str, str]:
    env = {
        **os.environ,
        "SECRET_KEY": secret,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "PYTHONPATH": str(source(row)),
        "MCP_ENGINES": ",".join(
            (
                "demo.basic.ENGINES",
                "demo.conformance.ENGINES",
                "benchmarks.engines.ENGINES",
            )
        ),
    }
    env.update(row.env)
    if row.settings:
        env["DJANGO_SETTINGS_MODULE"] = row.settings
    query = row.db_query
    if db_url and query and row.server == "uvicorn":
        # Under ASGI each request's thread would keep its own connection
        # until PostgreSQL runs out; Django advises none there, and a pool
        # (psycopg's) rather than a new connection per request.
        pooled = (
            "conn_max_age=0&pool=true" if db_url.startswith(PG) else "conn_max_age=0"
        )
        query = query.replace("conn_max_age=600", pooled)
    if db_url and query:
        db_url = f"{db_url}?{query}"
    env["DATABASE_URL"] = db_url or f"sqlite:///{WORK / 'unused.sqlite3'}"
    return env


def prepare(row: Row, database: Database, secret: str) -> Prepared:
    """Create the family's database for ``database`` and its tokens."""
    url = database.url(row.family)
    try:
        fresh_database(url)
        env = environment(row, url, secret)
        if row.family in ("gateway", "before"):
            script = [str(source(row) / "benchmarks" / "gateway_setup.py")]
            args = [str(database.seed_tenants), str(database.seed_exposures)]
            started = time.monotonic()
            out = _run([str(bin_dir(row) / "python"), *script, *args], "setup", env=env)
            took = time.monotonic() - started
            print(f"[setup] gateway {database.name}: {took:.1f}s", flush=True)
            return Prepared(tokens=json.loads(out.strip().splitlines()[-1]))
        if row.family == "limit":
            module = "benchmarks.ceiling.limit"
            _run([str(bin_dir(row) / "python"), "-m", module], "setup", env=env)
            return Prepared()
        module = "benchmarks.peers.mcpz_site.setup"
        out = _run([str(bin_dir(row) / "python"), "-m", module], "setup", env=env)
        token = out.strip().splitlines()[-1]
        return Prepared(tokens=dict.fromkeys(("bench", "list10", "list200"), token))
    except (Unavailable, OSError, ValueError) as exc:
        return Prepared(error=str(exc))


# -- Running ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def command(row: Row, port: int) -> list[str]:
    binary = str(bin_dir(row) / row.server)
    if row.server == "gunicorn":
        return [
            binary,
            row.app,
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            WORKERS,
            "--worker-class",
            "sync",
            "--log-level",
            "warning",
        ]
    return [
        binary,
        row.app,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        WORKERS,
        "--log-level",
        "warning",
        "--no-access-log",
    ]


@dataclass(frozen=True)
class Running:
    row: Row
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def url(self, slug: str) -> str:
        return f"http://127.0.0.1:{self.port}/t/{slug}/mcp"


@contextmanager
def running(row: Row, env: dict[str, str], tag: str) -> Iterator[Running]:
    """Run one server in its own process group until the block ends.

    Raises:
        Unavailable: it exits or does not accept connections in 60 s.
    """
    port = free_port()
    log = WORK / f"{row.name}-{tag}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 - our own fixed commands
            command(row, port),
            cwd=source(row),
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    server = Running(row, port, process, log)
    try:
        _wait_for_port(server)
        yield server
    finally:
        _stop(process)


def _wait_for_port(server: Running) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise Unavailable(
                f"exited with {server.process.returncode}: {_tail(server)}"
            )
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise Unavailable("did not accept connections within 60 s")


def _tail(server: Running) -> str:
    lines = server.log.read_text(errors="replace").strip().splitlines()
    return " | ".join(lines[-2:])[:300]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


def probe(server: Running, slug: str, body: bytes, headers: dict[str, str]) -> str:
    """Send one request until the server answers it (workers may still boot).

    Raises:
        Unavailable: no valid JSON-RPC result within 60 s.
    """
    deadline = time.monotonic() + 60
    problem = "no answer"
    while time.monotonic() < deadline:
        request = urllib.request.Request(  # noqa: S310 - loopback only
            server.url(slug), data=body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
                text = str(answer.read().decode("utf-8", "replace"))
            if '"result"' in text and '"error":' not in text:
                return text
            problem = f"200 {text[:200]}"
        except urllib.error.HTTPError as exc:
            problem = f"{exc.code} {exc.read()[:200]!r}"
        except OSError as exc:
            problem = str(exc)
        if server.process.poll() is not None:
            break
        time.sleep(0.5)
    raise Unavailable(f"probe failed: {problem}")


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _ppid(entry)
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    return children


def cpu_seconds(server: Running) -> float:
    """CPU time (user + system, every thread) of the server's processes so
    far: the master and every process under it."""
    children = _children()
    ticks, todo = 0, [server.process.pid]
    while todo:
        pid = todo.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
        todo.extend(children.get(pid, []))
    return ticks / os.sysconf("SC_CLK_TCK")


def worker_rss_kib(server: Running) -> int | None:
    """Resident memory of the largest worker process under the server."""
    children = _children()
    leaves, todo = [], [server.process.pid]
    while todo:
        pid = todo.pop()
        below = children.get(pid, [])
        if not below and pid != server.process.pid:
            leaves.append(pid)
        todo.extend(below)
    sizes = [size for pid in leaves if (size := _rss(pid, exclude="tracker"))]
    return max(sizes, default=None)


def _ppid(entry: Path) -> int | None:
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _rss(pid: int, *, exclude: str) -> int | None:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    if exclude.encode() in cmdline:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None
