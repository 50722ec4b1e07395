"""Prune old audit rows without breaking the chains.

Pending rows are sealed first. Each chain then loses a prefix: its sealed
rows up to the last one older than the cutoff (stopping at the first newer
one), and the last pruned row's position and hash become the chain's
anchor, where ``verify`` starts. Deleting old rows on purpose never reads
as tampering.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from mcp_gateway.audit_chain import hashing, seal


def prune(cutoff: datetime) -> dict[str, int]:
    """Delete audit rows older than ``cutoff``; rows deleted per kind."""
    seal.seal()
    deleted = {}
    for kind, model in hashing.KINDS.items():
        count = 0
        old = model.objects.filter(created_at__lt=cutoff)
        slugs = old.order_by().values_list("tenant_slug", flat=True).distinct()
        for slug in list(slugs):
            count += _prune_chain(kind, slug, cutoff)
        # Rows no chain holds (written while this ran) go as before.
        count += old.filter(chain_seq__isnull=True).delete()[0]
        deleted[kind] = count
    return deleted


def _prune_chain(kind: str, slug: str, cutoff: datetime) -> int:
    model = hashing.KINDS[kind]
    with transaction.atomic():
        head = seal.head_for_update(kind, slug)
        sealed = model.objects.filter(tenant_slug=slug, chain_seq__isnull=False)
        newer = sealed.filter(created_at__gte=cutoff).order_by("chain_seq").first()
        prefix = sealed.filter(created_at__lt=cutoff)
        if newer is not None:
            prefix = prefix.filter(chain_seq__lt=newer.chain_seq)
        last = prefix.order_by("-chain_seq").first()
        if last is None:
            return 0
        count = sealed.filter(chain_seq__lte=last.chain_seq).delete()[0]
        head.anchor_seq, head.anchor_hash = int(last.chain_seq or 0), last.chain_hash
        seal.save_head(head)
    return count
