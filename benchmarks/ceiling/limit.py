"""The physical limit: the ceiling's view plus the gateway's unavoidable
database work on a warm ``tools/call``, one audit-like INSERT.

The row is written as the gateway writes its audit row by default
(``AUDIT_DURABILITY = "async"``, ``mcp_gateway/audit/log.py``): one
autocommit INSERT whose own commit does not wait for the WAL flush
(``RETURNING set_config('synchronous_commit', 'off', true)`` on
PostgreSQL; the plain INSERT on SQLite). ``tools/list`` touches no
database. Run ``python -m benchmarks.ceiling.limit`` once to create the table.
"""

from __future__ import annotations

import datetime
import json
import os
from typing import Any

from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from benchmarks.ceiling import views

TABLE = "bench_call"
_COLUMNS = (
    "tenant_slug, user_name, token_prefix, tool_name, engine_id, engine_version,"
    " outcome, duration_ms, request_id, protocol_version, arguments, error_code,"
    " created_at, chain_hash"
)
_SUFFIX = {"postgresql": " RETURNING set_config('synchronous_commit', 'off', true)"}


def _insert_sql() -> str:
    marks = ", ".join(["%s"] * len(_COLUMNS.split(",")))
    suffix = _SUFFIX.get(connection.vendor, "")
    return f"INSERT INTO {TABLE} ({_COLUMNS}) VALUES ({marks}){suffix}"  # noqa: S608


@csrf_exempt
def endpoint(request: HttpRequest, slug: str) -> HttpResponse:
    message = json.loads(request.body)
    response = views.answer(message, slug)
    if message.get("method") == "tools/call":
        _audit(slug, message)
    return response


def _audit(slug: str, message: dict[str, Any]) -> None:
    params = message["params"]
    row = (
        slug,
        "bench",
        "mcp_bench_",
        params["name"],
        "demo.echo",
        "1",
        "ok",
        0,
        str(message.get("id")),
        "2025-11-25",
        json.dumps(params["arguments"]),
        "",
        datetime.datetime.now(datetime.UTC),
        "",
    )
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(), row)


_POSTGRES = f"""
CREATE TABLE {TABLE} (
    id bigserial PRIMARY KEY,
    tenant_id bigint NULL,
    tenant_slug varchar(64) NOT NULL,
    user_name varchar(150) NOT NULL,
    token_prefix varchar(16) NOT NULL,
    tool_name varchar(200) NOT NULL,
    engine_id varchar(200) NOT NULL,
    engine_version varchar(64) NOT NULL,
    outcome varchar(16) NOT NULL,
    duration_ms integer NOT NULL,
    request_id varchar(200) NOT NULL,
    protocol_version varchar(16) NOT NULL,
    arguments jsonb NULL,
    error_code varchar(64) NOT NULL,
    created_at timestamptz NOT NULL,
    chain_seq bigint NULL,
    chain_hash varchar(64) NOT NULL
)
"""
_SQLITE = (
    _POSTGRES.replace("bigserial PRIMARY KEY", "integer PRIMARY KEY AUTOINCREMENT")
    .replace("jsonb", "text")
    .replace("timestamptz", "datetime")
)
# The audit table's indexes (mcp_gateway.audit.models.ToolCall).
_INDEXES = (
    f"CREATE INDEX {TABLE}_time ON {TABLE} (created_at)",
    f"CREATE INDEX {TABLE}_tenant_time ON {TABLE} (tenant_id, created_at)",
    f"CREATE INDEX {TABLE}_usage ON {TABLE}"
    " (tenant_slug, created_at, tool_name, outcome)",
    f"CREATE INDEX {TABLE}_unsealed ON {TABLE} (id) WHERE chain_seq IS NULL",
)


def create_table() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
        cursor.execute(_POSTGRES if connection.vendor == "postgresql" else _SQLITE)
        for statement in _INDEXES:
            cursor.execute(statement)


if __name__ == "__main__":
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.ceiling.limit_settings")
    django.setup()
    create_table()
    print("created")
