"""Calls parked for staff approval (``CALL_APPROVAL = "staff"``).

A call to a tool that requires confirmation is parked (:func:`park`) under
its tenant, caller (user and token) , tool and a hash of its arguments;
staff approve or deny it (:func:`decide`, one audit event per tenant); the
caller's retry with the same arguments before it expires takes the approval
(:func:`take`) and runs once; :func:`prune` deletes old rows. Nothing here
runs an engine.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Case, Q, When
from django.utils import timezone

from engines_app.context import Principal
from mcp_gateway.audit import log as audit
from mcp_gateway.conf import gateway_settings
from mcp_gateway.models import CallApproval, Tenant

State = CallApproval.State
APPROVE = "approve_call"
DENY = "deny_call"
"""The exposure-change actions staff's decisions are audited as."""


def arguments_hash(arguments: Mapping[str, Any]) -> str:
    """SHA-256 of the arguments' canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(
        arguments,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=str,
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def ttl() -> timedelta:
    return timedelta(seconds=gateway_settings().REQUEST_STATE_TTL_SECONDS)


def latest(
    tenant: Tenant, principal: Principal, tool_name: str, digest: str
) -> CallApproval | None:
    """The parked call of this caller, tool and arguments that decides the
    retry: an approved one first (two calls parked at once may both be
    pending, and staff approve either), else the newest."""
    approved_first = Case(When(state=State.APPROVED, then=0), default=1)
    user, token_prefix = audit.actor_of(principal)
    return (
        CallApproval.objects.filter(
            tenant=tenant,
            user=user,
            token_prefix=token_prefix,
            tool_name=tool_name,
            arguments_hash=digest,
        )
        .order_by(approved_first, "-created_at", "-pk")
        .first()
    )


def park(
    tenant: Tenant,
    principal: Principal,
    tool_name: str,
    engine_id: str,
    arguments: Mapping[str, Any],
    digest: str,
) -> CallApproval:
    """Park the call for staff, pending until :func:`ttl` has passed.

    The row shows staff the arguments with the tenant's redacted keys'
    values replaced; the hash binds the exact arguments."""
    now = timezone.now()
    user, token_prefix = audit.actor_of(principal)
    return CallApproval.objects.create(
        tenant=tenant,
        user=user,
        token_prefix=token_prefix,
        tool_name=tool_name,
        engine_id=engine_id,
        arguments=audit.storable_json(audit.redacted_arguments(tenant, arguments)),
        arguments_hash=digest,
        created_at=now,
        expires_at=now + ttl(),
    )


def take(approval: CallApproval) -> bool:
    """Use an approval: ``True`` for exactly one caller of an approved,
    unexpired row, which becomes ``used``."""
    taken = CallApproval.objects.filter(
        pk=approval.pk, state=State.APPROVED, expires_at__gt=timezone.now()
    ).update(state=State.USED)
    return taken == 1


def expire(approval: CallApproval) -> None:
    """Note that a pending or approved row ran out of time."""
    CallApproval.objects.filter(
        pk=approval.pk, state__in=(State.PENDING, State.APPROVED)
    ).update(state=State.EXPIRED)
    approval.state = State.EXPIRED


def decide(approvals: Iterable[CallApproval], approve: bool, *, by: Any) -> int:
    """Approve or deny the pending, unexpired calls among ``approvals``;
    expired ones become ``expired``. One audit event per tenant; returns
    how many were decided."""
    now = timezone.now()
    ids = [approval.pk for approval in approvals]
    with transaction.atomic():
        rows = list(
            CallApproval.objects.select_for_update()
            .filter(pk__in=ids, state=State.PENDING)
            .select_related("tenant")
        )
        late = [row.pk for row in rows if row.expires_at <= now]
        CallApproval.objects.filter(pk__in=late).update(state=State.EXPIRED)
        decided = [row for row in rows if row.expires_at > now]
        CallApproval.objects.filter(pk__in=[row.pk for row in decided]).update(
            state=State.APPROVED if approve else State.DENIED,
            decided_by=audit.acting_user(by),
            decided_at=now,
        )
        _audit(decided, APPROVE if approve else DENY, by)
    return len(decided)


def prune(older_than_days: int) -> int:
    """Delete the parked calls asked before the cutoff that can no longer
    decide a call (denied, expired, used, or past their expiry); returns
    how many. ``mcp_audit prune`` runs it with the audit log's cutoff."""
    now = timezone.now()
    cutoff = now - timedelta(days=older_than_days)
    done = Q(state__in=(State.DENIED, State.EXPIRED, State.USED))
    old = CallApproval.objects.filter(created_at__lt=cutoff)
    return old.filter(done | Q(expires_at__lte=now)).delete()[0]


def _audit(decided: list[CallApproval], action: str, by: Any) -> None:
    by_tenant: dict[Tenant, set[str]] = defaultdict(set)
    for row in decided:
        by_tenant[row.tenant].add(row.engine_id)
    for tenant, engine_ids in by_tenant.items():
        audit.record_change(tenant, action, engine_ids, by=by, via="admin")
