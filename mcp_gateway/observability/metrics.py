"""Prometheus series of the gateway, kept with ``prometheus_client``.

Off unless ``METRICS_TOKEN`` (env ``MCP_METRICS_TOKEN``) is set and
``prometheus_client`` is installed (the ``metrics`` extra): until then every
hook below is a settings read and a return. The series live in
``prometheus_client``'s default registry, so its multiprocess mode
(``PROMETHEUS_MULTIPROC_DIR``, one directory shared by the workers of a
gunicorn or uvicorn master) adds every worker's values up; the view in
``mcp_gateway.urls.metrics`` serves them (docs/operations.md).

Labels stay bounded: ``tenant`` is the slug of a tenant that exists (``""``
when the request never reached one), ``tool`` the name of a tool in that
tenant's catalog (``""`` for any other name a client sends), ``outcome`` one
of the audit log's outcomes, ``protocol_version`` a served revision,
``"none"`` (no header) or ``"other"``.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_gateway.conf import gateway_settings

if TYPE_CHECKING:
    from prometheus_client import Counter, Gauge, Histogram

prometheus_client: Any
try:
    import prometheus_client
except ImportError:  # the app runs without the extra; metrics stay off
    prometheus_client = None

PREFIX = "mcp_gateway"
DURATION_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
AUTH_REASONS = ("missing", "invalid_token", "insufficient_scope")


def available() -> bool:
    """Whether ``prometheus_client`` is installed."""
    return prometheus_client is not None


def enabled() -> bool:
    """Whether this process keeps the series (a token set, the client there)."""
    return prometheus_client is not None and bool(gateway_settings().METRICS_TOKEN)


@dataclass(frozen=True)
class Series:
    calls: Counter
    duration: Histogram
    requests: Counter
    pool_in_use: Gauge
    pool_queued: Gauge
    pool_size: Gauge
    open_streams: Gauge
    rate_limit_hits: Counter
    auth_failures: Counter
    catalog_builds: Counter
    catalog_hits: Counter
    idp_fetches: Counter
    idp_failures: Counter
    audit_failures: Counter


_series: Series | None = None
_series_lock = threading.Lock()


def series() -> Series:
    """The series, registered once per process on first use.

    A process's first requests can reach this in several threads at once (each
    ASGI request's sync work runs in a thread of its own), and the registry
    refuses a name registered twice: the first use holds a lock.
    """
    global _series
    if _series is None:
        with _series_lock:
            if _series is None:
                _series = _registered()
    return _series


def _registered() -> Series:
    assert prometheus_client is not None  # noqa: S101 - enabled() checked it
    counter, gauge = prometheus_client.Counter, prometheus_client.Gauge
    livesum: Any = {"multiprocess_mode": "livesum"}
    return Series(
        calls=counter(
            f"{PREFIX}_tool_calls",
            "Tool calls by outcome (the audit log's outcomes).",
            ("tenant", "tool", "outcome"),
        ),
        duration=prometheus_client.Histogram(
            f"{PREFIX}_tool_call_duration_seconds",
            "Time from a tool call's admission to its answer.",
            ("tenant", "tool"),
            buckets=DURATION_BUCKETS,
        ),
        requests=counter(
            f"{PREFIX}_http_requests",
            "Requests to the MCP endpoint by HTTP status and protocol version.",
            ("tenant", "status", "protocol_version"),
        ),
        pool_in_use=gauge(
            f"{PREFIX}_engine_pool_in_use",
            "Engine pool threads running a sync engine.",
            **livesum,
        ),
        pool_queued=gauge(
            f"{PREFIX}_engine_pool_queued",
            "Sync engine runs handed to the pool and not yet started.",
            **livesum,
        ),
        pool_size=gauge(
            f"{PREFIX}_engine_pool_size",
            "Engine pool threads (ENGINE_THREADS per process).",
            **livesum,
        ),
        open_streams=gauge(
            f"{PREFIX}_open_streams",
            "SSE streams open (a tool call answered as a stream).",
            ("tenant",),
            **livesum,
        ),
        rate_limit_hits=counter(
            f"{PREFIX}_rate_limit_hits",
            "Tool calls refused by a rate limit.",
            ("tenant",),
        ),
        auth_failures=counter(
            f"{PREFIX}_auth_failures",
            "Requests refused for their credentials, by reason.",
            ("tenant", "reason"),
        ),
        catalog_builds=counter(
            f"{PREFIX}_catalog_builds",
            "Tenant catalogs built from the database (a cache miss).",
            ("tenant",),
        ),
        catalog_hits=counter(
            f"{PREFIX}_catalog_cache_hits",
            "Tenant catalogs served from this process's cache.",
            ("tenant",),
        ),
        idp_fetches=counter(
            f"{PREFIX}_idp_fetches",
            "Fetches from identity providers (metadata, keys, introspection).",
            ("host",),
        ),
        idp_failures=counter(
            f"{PREFIX}_idp_fetch_failures",
            "Identity provider fetches that failed.",
            ("host",),
        ),
        audit_failures=counter(
            f"{PREFIX}_audit_write_failures",
            "Audit rows that could not be written.",
            ("tenant",),
        ),
    )


_children: dict[tuple[int, tuple[str, ...]], Any] = {}


def _child(metric: Any, *labels: str) -> Any:
    """``metric.labels(*labels)``, kept: the labels are bounded, and the
    client's own lookup costs more than a dict read per call."""
    key = (id(metric), labels)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*labels)
    return child


# -- Hooks ----------------------------------------------------------------------


def call_done(tenant: str, tool: str, outcome: str, seconds: float) -> None:
    """Count a finished tool call (``tool`` already bounded by the caller)."""
    if not enabled():
        return
    s = series()
    _child(s.calls, tenant, tool, outcome).inc()
    _child(s.duration, tenant, tool).observe(seconds)
    if outcome == "rate_limited":
        _child(s.rate_limit_hits, tenant).inc()


def http_request(tenant: str, status: int, version: str) -> None:
    if enabled():
        _child(series().requests, tenant, str(status), version).inc()


def auth_failure(tenant: str, reason: str) -> None:
    if enabled():
        series().auth_failures.labels(tenant, reason).inc()


def stream_opened(tenant: str, delta: int) -> None:
    if enabled():
        series().open_streams.labels(tenant).inc(delta)


def catalog_built(tenant: str) -> None:
    if enabled():
        series().catalog_builds.labels(tenant).inc()


def catalog_hit(tenant: str) -> None:
    if enabled():
        _child(series().catalog_hits, tenant).inc()


def idp_fetch(host: str, failed: bool) -> None:
    if not enabled():
        return
    s = series()
    s.idp_fetches.labels(host).inc()
    if failed:
        s.idp_failures.labels(host).inc()


def audit_write_failed(tenant: str) -> None:
    if enabled():
        series().audit_failures.labels(tenant).inc()


def pool_sized(size: int) -> None:
    if enabled():
        series().pool_size.set(size)


def pool_handed() -> None:
    """A run handed to the pool: a thread taken, the run not started yet."""
    if enabled():
        s = series()
        s.pool_in_use.inc()
        s.pool_queued.inc()


def pool_taken(delta: int) -> None:
    """A pool thread given back (-1)."""
    if enabled():
        series().pool_in_use.inc(delta)


def pool_queued(delta: int) -> None:
    """A handed run started by its thread (-1)."""
    if enabled():
        series().pool_queued.inc(delta)


# -- Exposition -----------------------------------------------------------------


def exposition() -> tuple[bytes, str]:
    """The text the metrics view serves, and its content type."""
    assert prometheus_client is not None  # noqa: S101 - the view checked it
    series()  # present (at zero) from the first scrape on
    registry: Any = prometheus_client.REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return prometheus_client.generate_latest(registry), (
        prometheus_client.CONTENT_TYPE_LATEST
    )
