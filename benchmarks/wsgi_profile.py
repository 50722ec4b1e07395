"""CPU µs per warm request under WSGI, by component, in-process.

    .venv/bin/python benchmarks/wsgi_profile.py [--calls 2000] [--rounds 3]
        [--variants ...] [--methods call,list] [--top 25]

Calls WSGI applications directly (no server, no socket: a gunicorn-like
environ is built for each request, the response iterable consumed and
closed, as gunicorn's sync worker does), one request at a time, each
variant in its own child process:

- ``ceiling``: ``benchmarks/ceiling/`` (its view and the reference
  project's seven middleware), no database;
- ``ceiling-nomw``: the same with ``MIDDLEWARE = []``;
- ``physical-limit``: the ceiling's view plus the audit-like INSERT
  (``benchmarks/ceiling/limit.py``) on PostgreSQL with the reference
  project's connection settings;
- ``gateway``: ``config.wsgi:application`` with the README defaults on
  PostgreSQL (a ``DATABASE_URL`` without options: persistent connections
  with health checks; API token; audit log on, ``AUDIT_DURABILITY =
  "async"``; the principal cache, with the PostgreSQL change bus);
- ``gateway-nomw``: the same with ``MIDDLEWARE = []``;
- ``gateway-parts``: the gateway with each component of the request timed
  (wrappers installed in that child only): the exclusive thread CPU of
  each, so the rows add up to the total; each other thread's CPU per
  request (/proc/self/task);
- ``gateway-cprofile``: the gateway under cProfile, the top functions by
  their own time.

``tools/call`` is ``demo_echo`` on the ``bench`` tenant; ``tools/list`` is
the ``list10`` tenant's ten tools (``benchmarks/gateway_setup.py``). Each
child reports the process's CPU time per request (every thread) and the
wall time; the best round counts.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"
DB_NAME = "bench_wsgi_profile"
BODIES = {
    "call": (
        "bench",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "demo_echo", "arguments": {"text": "hello"}},
        },
    ),
    "list": ("list10", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
}
VARIANTS = (
    "ceiling",
    "ceiling-nomw",
    "physical-limit",
    "gateway",
    "gateway-nomw",
    "gateway-parts",
    "gateway-cprofile",
)
ENGINES = "demo.basic.ENGINES,benchmarks.engines.ENGINES"


def environ(slug: str, body: bytes, token: str | None, peer: Any) -> dict[str, Any]:
    """What gunicorn's sync worker hands the application for one request."""
    path = f"/t/{slug}/mcp"
    env: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "RAW_URI": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "SERVER_SOFTWARE": "gunicorn/23.0.0",
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "50000",
        "HTTP_HOST": "127.0.0.1:8000",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25",
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
        "gunicorn.socket": peer,
    }
    if token:
        env["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return env


def caller(
    application: Any, slug: str, body: bytes, token: str | None
) -> Callable[[], bytes]:
    """One request: the environ, the answer read and closed, checked."""
    peer, _other_end = socket.socketpair()  # an open, idle client connection
    status: list[str] = []

    def start_response(code: str, headers: Any, exc_info: Any = None) -> None:
        status.append(code)

    def call() -> bytes:
        status.clear()
        chunks = application(environ(slug, body, token, peer), start_response)
        try:
            answer = b"".join(chunks)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        if not status[0].startswith("200") or b'"result"' not in answer:
            raise RuntimeError(f"bad answer {status[0]}: {answer[:300]!r}")
        return answer

    call.keep = (peer, _other_end)  # type: ignore[attr-defined]
    return call


# -- Timing components ---------------------------------------------------------------


class Parts:
    """Exclusive thread CPU per named component (children subtracted).

    The timing itself costs CPU: :meth:`calibrate` measures what a timed
    call adds inside itself and to its parent, and :meth:`corrected` takes
    that off each component (by its own calls and its timed children's).
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.children: dict[str, int] = defaultdict(int)
        self._local = threading.local()
        self.inner = self.outer = 0.0

    def reset(self) -> None:
        self.seconds.clear()
        self.counts.clear()
        self.children.clear()

    def _stack(self) -> list[list[float]]:
        stack: list[list[float]] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        parts = self

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = parts._stack()
            stack.append([0.0, 0])
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.thread_time() - started
                inside, children = stack.pop()
                parts.seconds[name] += elapsed - inside
                parts.counts[name] += 1
                parts.children[name] += int(children)
                if stack:
                    stack[-1][0] += elapsed
                    stack[-1][1] += 1

        timed.__wrapped__ = function  # type: ignore[attr-defined]
        return timed

    def calibrate(self, calls: int = 20000) -> None:
        """What one timed call costs inside itself and in its parent."""
        child = self.wrap("calibration child", lambda: None)
        parent = self.wrap("calibration parent", lambda: child())
        bare = self.wrap("calibration bare", lambda: None)
        for _ in range(calls):
            parent()
            bare()
        self.inner = self.seconds["calibration child"] / calls
        self.outer = (
            self.seconds["calibration parent"] - self.seconds["calibration bare"]
        ) / calls
        self.reset()

    def corrected(self, name: str) -> float:
        own = self.seconds[name] - self.inner * self.counts[name]
        return own - self.outer * self.children[name]

    def patch(self, owner: Any, attribute: str, name: str) -> None:
        setattr(owner, attribute, self.wrap(name, getattr(owner, attribute)))

    def wrap_iterable(self, name: str, iterable: Any) -> Any:
        """Time what consuming and closing a response costs."""
        return _TimedIterable(self, name, iterable)


class _TimedIterable:
    def __init__(self, parts: Parts, name: str, inner: Any) -> None:
        self.parts, self.name, self.inner = parts, name, inner

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.parts.wrap(self.name, lambda: list(self.inner))())

    def close(self) -> None:
        self.parts.wrap(self.name, self.inner.close)()


def instrument(parts: Parts) -> None:
    """Wrap the gateway's components, in this child process only."""
    import psycopg
    from django.contrib import auth
    from django.contrib.auth.backends import ModelBackend
    from django.contrib.auth.middleware import AuthenticationMiddleware
    from django.contrib.messages.middleware import MessageMiddleware
    from django.contrib.sessions.middleware import SessionMiddleware
    from django.core import signals
    from django.core.handlers import base, wsgi
    from django.db.backends.postgresql.base import DatabaseWrapper
    from django.db.backends.utils import CursorWrapper
    from django.http import response
    from django.middleware import clickjacking, common, csrf, security
    from django.urls import resolvers

    import demo.basic
    from mcp_gateway import backends, compiled, credentials, principals, tokens
    from mcp_gateway.audit import log
    from mcp_gateway.dispatch import calls, cancellation, core, era, sdk
    from mcp_gateway.endpoint import (
        access,
        admission,
        bearer,
        boundary,
        peer,
        views,
    )
    from mcp_gateway.endpoint import wsgi as guard
    from mcp_gateway.engine_secrets import runtime as engine_secrets
    from mcp_gateway.limits import quotas, ratelimit
    from mcp_gateway.observability import observe, tracing
    from mcp_gateway.runtime import adapter, deadlines

    p = parts.patch
    # The WSGI layer.
    p(guard.BoundaryGuard, "__call__", "WSGI: BoundaryGuard")
    p(wsgi.WSGIHandler, "__call__", "WSGI: WSGIHandler, WSGIRequest, start_response")
    p(wsgi.WSGIRequest, "__init__", "WSGI: WSGIHandler, WSGIRequest, start_response")
    p(base.BaseHandler, "get_response", "Django: get_response, urlconf")
    p(base.BaseHandler, "_get_response", "Django: _get_response (view middleware)")
    p(resolvers.URLResolver, "resolve", "Django: URL resolving")
    p(resolvers.URLPattern, "resolve", "Django: URL resolving")
    for signal, label in (
        (signals.request_started, "signal request_started (close_old_connections)"),
        (signals.request_finished, "signal request_finished (close_old_connections)"),
    ):
        signal.send = parts.wrap(label, signal.send)  # type: ignore[method-assign]
    p(DatabaseWrapper, "is_usable", "DB: health check SELECT 1")
    p(response.HttpResponseBase, "close", "response close()")
    # Middleware: MiddlewareMixin.__call__ is the chain's own cost.
    from django.utils.deprecation import MiddlewareMixin

    p(MiddlewareMixin, "__call__", "middleware: MiddlewareMixin chain")
    for cls in (
        security.SecurityMiddleware,
        SessionMiddleware,
        common.CommonMiddleware,
        csrf.CsrfViewMiddleware,
        AuthenticationMiddleware,
        MessageMiddleware,
        clickjacking.XFrameOptionsMiddleware,
    ):
        for hook in ("process_request", "process_view", "process_response"):
            if hook in vars(cls):
                p(cls, hook, f"middleware: {cls.__name__}")
    # The view and admission.
    p(observe, "_watch", "view: observed (metrics, tracing, headers)")
    p(views, "admit", "admission: admit (its own code)")
    p(views, "_dispatch", "view: _dispatch")
    p(views, "call_scope", "admission: call_scope")
    p(admission, "_check_route", "admission: route, auth mode, origin, target")
    p(boundary, "check_target", "admission: route, auth mode, origin, target")
    for check in (
        "check_method",
        "check_declared_length",
        "check_authorization_syntax",
        "check_content_type",
        "check_accept",
        "bearer_token",
    ):
        p(boundary, check, "admission: header checks")
    p(admission, "_authenticate", "auth: _authenticate")
    p(admission, "_verify", "auth: _verify, credentials.collecting")
    auth_loop = "auth: authenticate() loop (backends, signatures)"
    if hasattr(bearer, "authenticate"):  # Django's own authenticate()
        p(bearer, "authenticate", auth_loop)
    if hasattr(bearer, "authenticate_quietly"):
        p(bearer, "authenticate_quietly", auth_loop)
    p(bearer, "authenticate_bearer", auth_loop)
    p(ModelBackend, "authenticate", "auth: ModelBackend.authenticate")
    p(backends.ApiTokenBackend, "authenticate", "auth: ApiTokenBackend")
    p(backends, "_touch", "auth: ApiTokenBackend")
    p(principals, "get", "auth: principal cache get")
    p(tokens, "matches", "auth: token hash compare (SHA-256)")
    p(credentials, "grant", "auth: _verify, credentials.collecting")
    p(admission, "_principal", "auth: Principal")
    p(access, "groups_of", "auth: Principal")
    p(admission, "catalog_for", "catalog: catalog_for, visible_to")
    p(admission, "_read_message", "admission: read body")
    p(boundary, "read_body", "admission: read body")
    p(admission.jsonrpc, "parse", "admission: JSON parse (jsonrpc.parse)")
    p(observe, "admitted", "admission: call_scope")
    p(log, "start_record", "admission: call_scope")
    p(access, "lacks_scope", "admission: call_scope")
    p(peer, "probe", "admission: call_scope")
    # Dispatch and the engine.
    p(views, "handle", "dispatch: handle")
    p(core, "prepare", "dispatch: prepare (route, admit, select)")
    p(era, "route_of", "dispatch: era.route_of")
    p(calls, "admit", "dispatch: calls.admit (rate limit, quotas)")
    p(ratelimit, "check", "dispatch: calls.admit (rate limit, quotas)")
    p(quotas, "check", "dispatch: calls.admit (rate limit, quotas)")
    p(calls, "start", "dispatch: calls.start (engine context)")
    p(adapter, "build_context", "dispatch: calls.start (engine context)")
    p(log, "arguments_to_keep", "dispatch: calls.start (engine context)")
    p(calls, "run", "engine: calls.run")
    p(cancellation, "_schedule", "engine: cancellation watch (2025 wire)")
    p(cancellation, "_end", "engine: cancellation watch (2025 wire)")
    p(engine_secrets, "call", "engine: secrets")
    p(adapter, "execute", "engine: adapter.execute (_Run frame)")
    p(adapter, "_refusal", "engine: input schema check")
    p(deadlines, "run_sync", "engine: deadlines.run_sync")
    p(demo.basic.Echo, "execute", "engine: Echo.execute itself")
    p(adapter, "to_result", "engine: to_result (CallToolResult, pydantic)")
    p(calls, "finish_result", "engine: finish_result")
    p(core, "_called", "result: sdk.call_result, encode")
    p(core, "_listed", "result: tools/list encoded once (lookup)")
    p(views, "response_of", "response: HttpResponse")
    # The audit row.
    p(log, "record_call", "audit: record_call (its own code)")
    p(observe, "call_done", "audit: observe.call_done")
    p(log, "call_row", "audit: call_row (the row's values)")
    p(log, "_insert", "audit: _insert, CompiledInsert")
    p(compiled.CompiledInsert, "insert", "audit: _insert, CompiledInsert")
    p(compiled.CompiledInsert, "insert_values", "audit: _insert, CompiledInsert")
    p(CursorWrapper, "execute", "DB: Django cursor wrapper")
    p(DatabaseWrapper, "cursor", "DB: Django cursor wrapper")
    p(psycopg.Cursor, "execute", "DB: psycopg execute (client CPU)")
    del auth, tracing, sdk


def other_threads() -> dict[str, float]:
    """CPU seconds of each thread but this one, by Python thread name."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    me = threading.get_native_id()
    tick = os.sysconf("SC_CLK_TCK")
    seen: dict[str, float] = defaultdict(float)
    for task in Path("/proc/self/task").iterdir():
        tid = int(task.name)
        if tid == me:
            continue
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seen[names.get(tid, f"thread {tid}")] += (
            int(fields[11]) + int(fields[12])
        ) / tick
    return seen


# -- The children ------------------------------------------------------------------


def setup(variant: str, method: str) -> tuple[Any, Parts | None]:
    parts = None
    if variant.startswith("gateway"):
        os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
        os.environ["MCP_SERVER_INTERFACE"] = "wsgi"
        os.environ["DATABASE_URL"] = f"{PG}/{DB_NAME}"
        if variant == "gateway-nomw":
            import config.settings as site

            site.MIDDLEWARE = []
        if variant == "gateway-parts":
            import django

            django.setup()
            parts = Parts()
            instrument(parts)
            parts.calibrate()
        import config.wsgi

        return config.wsgi.application, parts
    if variant == "physical-limit":
        os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.ceiling.limit_settings"
        os.environ["DATABASE_URL"] = f"{PG}/{DB_NAME}"
    else:
        os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.ceiling.settings"
        if variant == "ceiling-nomw":
            import benchmarks.ceiling.settings as site

            site.MIDDLEWARE = []
    from django.core.wsgi import get_wsgi_application

    return get_wsgi_application(), parts


def child(
    variant: str, method: str, calls: int, rounds: int, token: str | None, top: int
) -> dict[str, Any]:
    application, parts = setup(variant, method)
    slug, message = BODIES[method]
    body = json.dumps(message, separators=(",", ":")).encode()
    call = caller(application, slug, body, token)
    for _ in range(300):
        call()
    if variant == "gateway-cprofile":
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(calls):
            call()
        profile.disable()
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out).sort_stats("tottime")
        stats.print_stats(top)
        return {"cprofile": _trimmed(out.getvalue()), "calls": calls}
    best: dict[str, Any] = {}
    for _ in range(rounds):
        if parts is not None:
            parts.reset()
        threads = other_threads()
        cpu, wall = time.process_time(), time.perf_counter()
        own = time.thread_time()
        for _ in range(calls):
            call()
        result: dict[str, Any] = {
            "cpu_us": (time.process_time() - cpu) / calls * 1e6,
            "wall_us": (time.perf_counter() - wall) / calls * 1e6,
            "main_thread_us": (time.thread_time() - own) / calls * 1e6,
        }
        after = other_threads()
        result["threads"] = {
            name: (after[name] - threads.get(name, 0.0)) / calls * 1e6
            for name in after
            if after[name] - threads.get(name, 0.0) > 0
        }
        if parts is not None:
            result["parts"] = {
                k: parts.corrected(k) / calls * 1e6 for k in parts.seconds
            }
            result["timing_us"] = (
                sum(parts.seconds[k] - parts.corrected(k) for k in parts.seconds)
                / calls
                * 1e6
            )
            result["calibration_ns"] = [parts.inner * 1e9, parts.outer * 1e9]
            result["counts"] = {k: v / calls for k, v in parts.counts.items()}
        if not best or result["cpu_us"] < best["cpu_us"]:
            best = result
    return best


def _trimmed(text: str) -> str:
    root = str(ROOT) + "/"
    lines = [line.replace(root, "") for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(lines[start:]).rstrip()


# -- The parent ----------------------------------------------------------------------


def prepare() -> dict[str, str]:
    """A fresh database with the benchmark tenants and the limit's table."""
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')
    env = {
        **os.environ,
        "DATABASE_URL": f"{PG}/{DB_NAME}",
        "MCP_ENGINES": ENGINES,
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(  # noqa: S603 - our own script
        [sys.executable, str(ROOT / "benchmarks" / "gateway_setup.py"), "0", "0"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    limit_env = {**env, "DJANGO_SETTINGS_MODULE": "benchmarks.ceiling.limit_settings"}
    subprocess.run(
        [sys.executable, "-m", "benchmarks.ceiling.limit"],
        env=limit_env,
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    tokens: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return tokens


def run_child(
    variant: str, method: str, token: str, args: argparse.Namespace
) -> dict[str, Any] | None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SECRET_KEY": "wsgi-profile-" + "x" * 50,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "MCP_ENGINES": ENGINES,
        "DATABASE_URL": f"{PG}/{DB_NAME}",
    }
    command = [sys.executable, __file__, "--child", variant, "--methods", method]
    command += ["--token", token, "--calls", str(args.calls)]
    command += ["--rounds", str(args.rounds), "--top", str(args.top)]
    done = subprocess.run(  # noqa: S603 - this script
        command, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        print(f"{variant} {method}: failed: {done.stderr.strip()[-1500:]}")
        return None
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def report(results: dict[tuple[str, str], dict[str, Any]], args: Any) -> None:
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    methods = args.methods.split(",")
    print(f"load average at the end: {load}; µs per request, best of {args.rounds}")
    print()
    heads = " | ".join(f"{m} CPU µs | {m} wall µs" for m in methods)
    print(f"| variant | {heads} |")
    print("|---|" + "---:|---:|" * len(methods))
    for variant in VARIANTS:
        cells = []
        for m in methods:
            r = results.get((variant, m))
            ok = r is not None and "cpu_us" in r
            cells += [f"{r['cpu_us']:.0f}", f"{r['wall_us']:.0f}"] if ok else ["-", "-"]
        if any(c != "-" for c in cells):
            print(f"| {variant} | " + " | ".join(cells) + " |")
    parted = {m: results.get(("gateway-parts", m)) for m in methods}
    if any(parted.values()):
        _parts_table(parted, methods)
    for m in methods:
        profiled = results.get(("gateway-cprofile", m))
        if profiled:
            print()
            print(f"cProfile of the gateway, tools/{m}, {profiled['calls']} requests,")
            print("top functions by own time:")
            print()
            print(profiled["cprofile"])


def _parts_table(parted: dict[str, Any], methods: list[str]) -> None:
    names: list[str] = []
    for r in parted.values():
        for name in (r or {}).get("parts", {}):
            if name not in names:
                names.append(name)
    print()
    print("gateway-parts: exclusive CPU µs per request of each component")
    print("(its children and the timing's own cost subtracted; calls per")
    print("request in brackets)")
    print()
    print("| component | " + " | ".join(f"tools/{m}" for m in methods) + " |")
    print("|---|" + "---:|" * len(methods))
    for name in names:
        cells = []
        for m in methods:
            r = parted[m] or {}
            us = r.get("parts", {}).get(name)
            n = r.get("counts", {}).get(name, 0)
            cells.append("-" if us is None else f"{us:.1f} ({n:g})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    rows = {
        "sum of the components": lambda r: sum(r.get("parts", {}).values()),
        "the timing itself (calibrated)": lambda r: r["timing_us"],
        "unattributed (the loop, the environ)": lambda r: (
            r["main_thread_us"] - sum(r.get("parts", {}).values()) - r["timing_us"]
        ),
        "request thread, total": lambda r: r["main_thread_us"],
    }
    for label, of in rows.items():
        cells = [f"{of(parted[m]):.1f}" if parted[m] else "-" for m in methods]
        print(f"| {label} | " + " | ".join(cells) + " |")
    threads: list[str] = []
    for r in parted.values():
        for name in (r or {}).get("threads", {}):
            if name not in threads:
                threads.append(name)
    for name in threads:
        cells = [
            f"{(parted[m] or {}).get('threads', {}).get(name, 0.0):.1f}"
            for m in methods
        ]
        print(f"| other thread: {name} | " + " | ".join(cells) + " |")
    cells = [f"{parted[m]['cpu_us']:.1f}" if parted[m] else "-" for m in methods]
    print("| process, every thread (timed) | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--methods", default="call,list")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--child")
    parser.add_argument("--token")
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        result = child(
            args.child, args.methods, args.calls, args.rounds, args.token, args.top
        )
        print(json.dumps(result))
        return
    tokens = prepare()
    results = {}
    for variant in args.variants.split(","):
        for method in args.methods.split(","):
            slug = BODIES[method][0]
            result = run_child(variant, method, tokens[slug], args)
            if result is not None:
                results[variant, method] = result
    report(results, args)


if __name__ == "__main__":
    main()
