"""Seal committed audit rows into each tenant's chain, off the request path.

One sealer at a time per chain: the chain's head row is locked (``SELECT …
FOR UPDATE`` on PostgreSQL; SQLite serializes writers), then the chain's
unsealed rows, in id order, get the next positions and hashes. A row that
commits later than a higher id joins the chain when it is seen: the chain's
order is its positions, and every row lands in it exactly once.
"""

from __future__ import annotations

from typing import TextIO

from django.db import IntegrityError, transaction
from django.db.models import Model
from django.utils import timezone

from mcp_gateway.audit.models import ChainHead
from mcp_gateway.audit_chain import hashing, stream
from mcp_gateway.conf import gateway_settings

BATCH = 500


def seal(tenant_slug: str | None = None, batch: int = BATCH) -> int:
    """Seal every pending row (of one tenant, or all); the rows sealed."""
    sealed = 0
    with stream.opened() as out:
        for kind in hashing.KINDS:
            for slug in pending_slugs(kind, tenant_slug):
                sealed += seal_chain(kind, slug, batch, out)
    return sealed


def pending_slugs(kind: str, tenant_slug: str | None = None) -> list[str]:
    rows = hashing.KINDS[kind].objects.filter(chain_seq__isnull=True)
    if tenant_slug is not None:
        rows = rows.filter(tenant_slug=tenant_slug)
    slugs = rows.order_by("tenant_slug").values_list("tenant_slug", flat=True)
    return list(slugs.distinct())


def seal_chain(
    kind: str, slug: str, batch: int = BATCH, out: TextIO | None = None
) -> int:
    """Seal the pending rows of one chain, ``batch`` per transaction."""
    total = 0
    while True:
        done = _seal_batch(kind, slug, batch, out)
        total += done
        if done < batch:
            return total


def head_for_update(kind: str, slug: str) -> ChainHead:
    """The chain's head, locked until the transaction ends (made if new)."""
    try:
        with transaction.atomic():
            ChainHead.objects.get_or_create(tenant_slug=slug, kind=kind)
    except IntegrityError:
        pass  # made meanwhile by another sealer
    return ChainHead.objects.select_for_update().get(tenant_slug=slug, kind=kind)


def _seal_batch(kind: str, slug: str, batch: int, out: TextIO | None) -> int:
    model = hashing.KINDS[kind]
    with transaction.atomic():
        head = head_for_update(kind, slug)
        pending = model.objects.filter(tenant_slug=slug, chain_seq__isnull=True)
        rows: list[Model] = list(pending.order_by("pk")[:batch])
        if not rows:
            return 0
        previous = head.last_hash or head.anchor_hash
        seq = max(head.last_seq, head.anchor_seq)
        for row in rows:
            seq += 1
            row.chain_seq = seq  # type: ignore[attr-defined]
            row.chain_hash = hashing.row_hash(previous, kind, row, seq)  # type: ignore[attr-defined]
            if out is not None:
                stream.write(out, kind, row, previous)
            previous = row.chain_hash  # type: ignore[attr-defined]
        model.objects.bulk_update(rows, ["chain_seq", "chain_hash"])  # type: ignore[arg-type]
        head.last_seq, head.last_id, head.last_hash = seq, rows[-1].pk, previous
        save_head(head)
    if out is not None:
        out.flush()
    return len(rows)


def save_head(head: ChainHead) -> None:
    key = gateway_settings().AUDIT_ANCHOR_KEY
    head.signature = hashing.sign(head, key) if key else ""
    head.updated_at = timezone.now()
    head.save()
