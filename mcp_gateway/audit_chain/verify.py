"""Recompute each tenant's chains and report the first broken link.

A chain is broken when a sealed row's hash no longer matches its content
and the hash before it (altered, moved), when a position is missing (a row
deleted), when the chain ends before its head (rows deleted from the end),
or when the head's signature fails under ``AUDIT_ANCHOR_KEY`` (the head
rewritten). Unsealed rows are pending, never broken.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from mcp_gateway.audit.models import ChainHead
from mcp_gateway.audit_chain import hashing
from mcp_gateway.conf import gateway_settings


@dataclass(frozen=True)
class Report:
    tenant_slug: str
    kind: str
    verified: int
    pending: int
    broken: str = ""
    """The first broken link, in words; empty when the chain holds."""
    broken_id: int | None = None

    @property
    def ok(self) -> bool:
        return not self.broken


def verify(tenant_slug: str | None = None) -> list[Report]:
    return [
        verify_chain(kind, slug)
        for kind in hashing.KINDS
        for slug in _slugs(kind, tenant_slug)
    ]


def _slugs(kind: str, tenant_slug: str | None) -> list[str]:
    model = hashing.KINDS[kind]
    heads = ChainHead.objects.filter(kind=kind)
    rows = model.objects.all()
    if tenant_slug is not None:
        heads, rows = (
            heads.filter(tenant_slug=tenant_slug),
            rows.filter(tenant_slug=tenant_slug),
        )
    found = set(heads.values_list("tenant_slug", flat=True))
    found |= set(rows.values_list("tenant_slug", flat=True).distinct())
    return sorted(found)


def verify_chain(kind: str, slug: str) -> Report:
    model = hashing.KINDS[kind]
    head = ChainHead.objects.filter(tenant_slug=slug, kind=kind).first()
    rows = model.objects.filter(tenant_slug=slug)
    pending = rows.filter(chain_seq__isnull=True).count()
    previous = head.anchor_hash if head else ""
    expected = (head.anchor_seq if head else 0) + 1
    verified = 0

    def report(problem: str = "", row_id: int | None = None) -> Report:
        return Report(slug, kind, verified, pending, problem, row_id)

    sealed = rows.filter(chain_seq__isnull=False).order_by("chain_seq", "pk")
    for row in sealed.iterator(chunk_size=2000):
        seq = int(row.chain_seq or 0)
        if head is None:
            return report("sealed rows but no chain head: the head was deleted", row.pk)
        if seq < expected:
            return report(
                f"row {row.pk} repeats position {seq} or precedes the anchor: "
                "rows were reordered or the anchor rewritten",
                row.pk,
            )
        if seq > expected:
            return report(
                f"position {expected} is missing before row {row.pk}: a sealed "
                "row was deleted",
                row.pk,
            )
        digest = hashing.row_hash(previous, kind, row, seq)
        if not hmac.compare_digest(digest, row.chain_hash):
            return report(
                f"row {row.pk} (position {seq}) does not match its hash: it was "
                "altered, or rows before it were altered or reordered",
                row.pk,
            )
        previous, expected, verified = digest, expected + 1, verified + 1
    if head is None:
        return report()
    last = expected - 1
    if last != head.last_seq or (verified and previous != head.last_hash):
        return report(
            f"the chain ends at position {last} but its head records "
            f"{head.last_seq}: sealed rows were deleted from its end"
        )
    key = gateway_settings().AUDIT_ANCHOR_KEY
    if key and not hmac.compare_digest(head.signature, hashing.sign(head, key)):
        return report(
            "the chain head's signature does not match AUDIT_ANCHOR_KEY: the "
            "head was rewritten (or signed with another key)"
        )
    return report()
