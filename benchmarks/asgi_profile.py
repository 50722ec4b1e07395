"""CPU µs per ``tools/call`` under ASGI, by component, in-process.

    .venv/bin/python benchmarks/asgi_profile.py [--calls 2000] [--rounds 3]

Calls ASGI applications directly on an asyncio event loop (no server, no
socket), one request at a time, each variant in its own child process:

- ``asgi-bare``: Django's ``ASGIHandler`` and the ceiling's view
  (``benchmarks/ceiling/``) as an ``async def`` view, no middleware: what
  Django's ASGI path costs by itself;
- ``asgi-ceiling``: the ceiling as the benchmark serves it (its sync view,
  the reference project's seven middleware);
- ``gateway``: ``config.asgi:application`` with the README defaults on
  PostgreSQL (a ``DATABASE_URL`` without options: psycopg's pool; API
  token; audit log on, ``AUDIT_DURABILITY = "async"``): the guard's fast
  path (``mcp_gateway.endpoint.fastpath``) serves the mount;
- ``gateway-chain``: the same with the fast path off
  (``MCP_ASGI_FAST_PATH=false``): Django's handler and the reference
  project's seven middleware;
- ``gateway-thread-per-request``: ``gateway-chain`` with the guard's kept
  request threads off (``mcp_gateway.endpoint.threads``): Django's own
  thread per request, started and joined each time;
- ``gateway-nomw``: ``gateway-chain`` with ``MIDDLEWARE = []``, to show
  what the middleware's thread hops cost the gateway.

Each child reports the process's CPU time per call (every thread), the
wall time, how many ``sync_to_async`` calls a request makes, and, for the
gateway, the CPU spent inside admission (authentication, the boundary
checks, the catalog), dispatch and the engine (``answer_here``) and the
audit INSERT, all three in the request's first hop to its thread (a
``blocking = False`` engine). The best round counts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"
DB_NAME = "bench_asgi_profile"
BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "demo_echo", "arguments": {"text": "hello"}},
    },
    separators=(",", ":"),
).encode()
VARIANTS = (
    "asgi-bare",
    "asgi-ceiling",
    "gateway",
    "gateway-chain",
    "gateway-thread-per-request",
    "gateway-nomw",
)


def scope(token: str | None) -> dict[str, Any]:
    headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2025-11-25"),
        (b"content-length", str(len(BODY)).encode()),
    ]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/t/bench/mcp",
        "raw_path": b"/t/bench/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }


async def call(application: Any, request: dict[str, Any]) -> bytes:
    sent = False
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    body: list[bytes] = []
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": BODY, "more_body": False}
        await never
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            body.append(message.get("body", b""))

    await application(dict(request), receive, send)
    never.cancel()
    answer = b"".join(body)
    if status != 200 or b'"result"' not in answer or b"hello" not in answer:
        raise RuntimeError(f"bad answer {status}: {answer[:200]!r}")
    return answer


class Meter:
    """Thread CPU time spent inside a function (any thread)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += time.thread_time() - started

        return timed

    def awrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        # On the loop: thread time while the coroutine runs its steps only
        # is not separable cheaply; this counts the loop thread's CPU from
        # start to end, awaited hops included (their loop-side share).
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return await function(*args, **kwargs)
            finally:
                self.seconds += time.thread_time() - started

        return timed


def child(variant: str, calls: int, rounds: int, token: str | None) -> dict[str, Any]:
    hops = {"n": 0}
    meters: dict[str, Meter] = {}
    if variant.startswith("gateway"):
        os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
        os.environ["MCP_SERVER_INTERFACE"] = "asgi"
        os.environ["DATABASE_URL"] = f"{PG}/{DB_NAME}"
        if variant != "gateway":
            os.environ["MCP_ASGI_FAST_PATH"] = "false"
        if variant == "gateway-nomw":
            import config.settings as site

            site.MIDDLEWARE = []
    else:
        os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.ceiling.settings"
        if variant == "asgi-bare":
            import benchmarks.ceiling.settings as site

            site.MIDDLEWARE = []
            site.ROOT_URLCONF = "benchmarks.asgi_profile"
    from asgiref import sync

    original = sync.SyncToAsync.__call__

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        hops["n"] += 1
        return await original(self, *args, **kwargs)

    sync.SyncToAsync.__call__ = counted  # type: ignore[method-assign]
    if variant.startswith("gateway"):
        import config.asgi
        from mcp_gateway.audit import log
        from mcp_gateway.endpoint import aviews

        for name, module, attr, mode in (
            ("admission", aviews, "_admit_and_scope", "sync"),
            ("audit INSERT", log, "record_call", "sync"),
            ("dispatch and engine (first hop)", aviews, "answer_here", "sync"),
        ):
            meter = meters[name] = Meter()
            function = getattr(module, attr)
            setattr(
                module,
                attr,
                meter.wrap(function) if mode == "sync" else meter.awrap(function),
            )

        application = config.asgi.application
        if variant == "gateway-thread-per-request":
            application.threads = _DjangosThreads()
    else:
        from django.core.asgi import get_asgi_application

        application = get_asgi_application()
    request = scope(token if variant.startswith("gateway") else None)
    loop = asyncio.new_event_loop()
    for _ in range(200):
        loop.run_until_complete(call(application, request))
    best: dict[str, Any] = {}
    for _ in range(rounds):
        hops["n"] = 0
        for meter in meters.values():
            meter.seconds = 0.0
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(calls):
            loop.run_until_complete(call(application, request))
        result = {
            "cpu_us": (time.process_time() - cpu) / calls * 1e6,
            "wall_us": (time.perf_counter() - wall) / calls * 1e6,
            "hops": hops["n"] / calls,
            **{name: m.seconds / calls * 1e6 for name, m in meters.items()},
        }
        if not best or result["cpu_us"] < best["cpu_us"]:
            best = result
    return best


class _DjangosThreads:
    """No kept thread: Django's handler makes its own per request."""

    @contextlib.asynccontextmanager
    async def request(self) -> AsyncIterator[None]:
        yield


# asgi-bare's URLconf: the ceiling's answer from an async view.
async def _aview(request: Any, slug: str) -> Any:
    from benchmarks.ceiling import views

    return views.answer(json.loads(request.body), slug)


def _urlpatterns() -> list[Any]:
    try:
        from django.urls import path
    except ImportError:  # pragma: no cover
        return []
    return [path("t/<slug:slug>/mcp", _aview)]


def prepare() -> str:
    """A fresh database with the benchmark tenants; the ``bench`` token."""
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')
    env = {
        **os.environ,
        "DATABASE_URL": f"{PG}/{DB_NAME}",
        "MCP_ENGINES": "demo.basic.ENGINES,benchmarks.engines.ENGINES",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(  # noqa: S603 - our own script
        [sys.executable, str(ROOT / "benchmarks" / "gateway_setup.py"), "0", "0"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return str(json.loads(done.stdout.strip().splitlines()[-1])["bench"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child")
    parser.add_argument("--token")
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        result = child(args.child, args.calls, args.rounds, args.token)
        print(json.dumps(result))
        return
    token = prepare()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SECRET_KEY": "asgi-profile-" + "x" * 50,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "MCP_ENGINES": "demo.basic.ENGINES,benchmarks.engines.ENGINES",
    }
    results = {}
    for variant in VARIANTS:
        command = [sys.executable, __file__, "--child", variant, "--token", token]
        command += ["--calls", str(args.calls), "--rounds", str(args.rounds)]
        done = subprocess.run(  # noqa: S603 - this script
            command, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            print(f"{variant}: failed: {done.stderr.strip()[-800:]}")
            continue
        results[variant] = json.loads(done.stdout.strip().splitlines()[-1])
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"load average at the end: {load}; µs per call, best of {args.rounds}")
    print("| variant | CPU µs | wall µs | sync_to_async per request | inside |")
    print("|---|---:|---:|---:|---|")
    for variant, r in results.items():
        totals = {"cpu_us", "wall_us", "hops"}
        inside = ", ".join(f"{k} {v:.0f}" for k, v in r.items() if k not in totals)
        print(
            f"| {variant} | {r['cpu_us']:.0f} | {r['wall_us']:.0f} "
            f"| {r['hops']:.1f} | {inside or '-'} |"
        )


urlpatterns = _urlpatterns() if os.environ.get("DJANGO_SETTINGS_MODULE") else []

if __name__ == "__main__":
    main()
