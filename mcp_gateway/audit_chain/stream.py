"""The audit as JSON lines for a SIEM, in Elastic Common Schema field names.

``AUDIT_STREAM`` (env ``MCP_AUDIT_STREAM``) is a file path (appended to),
``stdout``, or empty (off). Sealing writes one line per row it seals, with
the row's chain hash in ``event.hash``; docs/security.md shows the schema.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from django.db.models import Model

from mcp_gateway.audit.models import ChainHead
from mcp_gateway.audit_chain.hashing import plain
from mcp_gateway.conf import gateway_settings

ECS_VERSION = "8.11.0"


@contextlib.contextmanager
def opened() -> Iterator[TextIO | None]:
    """The stream to write to, or ``None`` when it is off."""
    target = gateway_settings().AUDIT_STREAM.strip()
    if not target:
        yield None
    elif target == "stdout":
        yield sys.stdout
        sys.stdout.flush()
    else:
        with open(target, "a", encoding="utf-8") as stream:
            yield stream


def write(stream: TextIO, kind: str, row: Model, previous: str) -> None:
    document = call_event(row) if kind == ChainHead.Kind.CALL else change_event(row)
    document["mcp_gateway"]["chain"] = {
        "seq": getattr(row, "chain_seq", None),
        "hash": getattr(row, "chain_hash", ""),
        "previous": previous,
    }
    document["event"]["hash"] = getattr(row, "chain_hash", "")
    document["event"]["sequence"] = getattr(row, "chain_seq", None)
    stream.write(json.dumps(document, ensure_ascii=False, sort_keys=True) + "\n")


def _common(row: Any, dataset: str) -> dict[str, Any]:
    return {
        "@timestamp": plain(row.created_at).replace("+00:00", "Z"),
        "ecs": {"version": ECS_VERSION},
        "service": {"name": "django-mcp-gateway"},
        "organization": {"name": row.tenant_slug},
        "event": {
            "kind": "event",
            "dataset": dataset,
            "provider": "django-mcp-gateway",
            "id": str(row.pk),
        },
    }


def call_event(row: Any) -> dict[str, Any]:
    document = _common(row, "mcp_gateway.tool_call")
    document["event"].update(
        category=["api"],
        type=["access"],
        action="tools/call",
        outcome="success" if row.outcome == "ok" else "failure",
        reason=row.outcome,
        duration=row.duration_ms * 1_000_000,
    )
    document["user"] = {"name": row.user}
    document["mcp_gateway"] = {
        "kind": "call",
        "tool": row.tool_name,
        "engine": {"id": row.engine_id, "version": row.engine_version},
        "token_prefix": row.token_prefix,
        "request_id": row.request_id,
        "protocol_version": row.protocol_version,
        "arguments": row.arguments,
    }
    return document


def change_event(row: Any) -> dict[str, Any]:
    document = _common(row, "mcp_gateway.exposure_change")
    document["event"].update(
        category=["configuration"],
        type=["change"],
        action=row.action,
        outcome="success",
    )
    document["user"] = {"name": row.actor_name}
    document["mcp_gateway"] = {
        "kind": "change",
        "engine_ids": row.engine_ids,
        "catalog_version": row.catalog_version,
        "via": row.via,
    }
    return document
