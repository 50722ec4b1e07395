"""What a sealed row's hash covers, and the head's signature.

``hash = SHA-256(previous hash + "\\n" + canonical JSON of the row)``: the
row's own id, its position in the chain and every audited field, but not
foreign keys that deleting a tenant or user sets to NULL (their plain-text
copies are covered). The first row's previous hash is the chain's anchor
(empty before any prune).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

from django.db.models import Model

from mcp_gateway.audit.models import ChainHead, ExposureEvent, ToolCall

KINDS: dict[str, type[ToolCall] | type[ExposureEvent]] = {
    ChainHead.Kind.CALL: ToolCall,
    ChainHead.Kind.CHANGE: ExposureEvent,
}
FIELDS: dict[str, tuple[str, ...]] = {
    ChainHead.Kind.CALL: (
        "tenant_slug",
        "user",
        "token_prefix",
        "tool_name",
        "engine_id",
        "engine_version",
        "outcome",
        "duration_ms",
        "request_id",
        "protocol_version",
        "arguments",
        "created_at",
    ),
    ChainHead.Kind.CHANGE: (
        "tenant_slug",
        "action",
        "engine_ids",
        "catalog_version",
        "actor_name",
        "via",
        "created_at",
    ),
}


def content(kind: str, row: Model, seq: int) -> dict[str, Any]:
    body = {name: plain(getattr(row, name)) for name in FIELDS[kind]}
    return {"kind": kind, "id": row.pk, "seq": seq, **body}


def row_hash(previous: str, kind: str, row: Model, seq: int) -> str:
    text = json.dumps(
        content(kind, row, seq),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )
    return hashlib.sha256(f"{previous}\n{text}".encode()).hexdigest()


def sign(head: ChainHead, key: str) -> str:
    """HMAC-SHA256 of the head's position, hashes and anchor under ``key``."""
    text = "\n".join(
        str(part)
        for part in (
            head.tenant_slug,
            head.kind,
            head.last_seq,
            head.last_id,
            head.last_hash,
            head.anchor_seq,
            head.anchor_hash,
        )
    )
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


def plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="microseconds")
    return value
