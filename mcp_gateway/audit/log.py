"""The audit log: write tool calls and exposure changes, prune old rows."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Any, cast

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import DataError, IntegrityError, connections, router
from django.utils import timezone

from engines_app.context import Principal
from mcp_gateway.audit import onloop
from mcp_gateway.audit.callrecord import CallRecord, storable
from mcp_gateway.audit.models import ExposureEvent, ToolCall
from mcp_gateway.compiled import CompiledInsert
from mcp_gateway.conf import AUDIT_ASYNC, gateway_settings
from mcp_gateway.models import Tenant
from mcp_gateway.observability import metrics, observe

logger = logging.getLogger("mcp_gateway")

REDACTED = "[redacted]"
UNSTORABLE = "[unstorable]"
"""What the row holds instead of a value no database would store."""


_insert_call = CompiledInsert(ToolCall)
# The same INSERT, committed without waiting for the WAL flush: the setting
# is local to the statement's own transaction (autocommit), so it changes
# that one commit and nothing else on the connection. In the statement
# itself, it costs no round trip (``SET LOCAL`` would need three more).
_insert_call_async = CompiledInsert(
    ToolCall,
    suffixes={"postgresql": " RETURNING set_config('synchronous_commit', 'off', true)"},
)


def start_record(
    method: str, tenant: Tenant | None = None, principal: Principal | None = None
) -> CallRecord | None:
    """A record for a ``tools/call`` while the audit log, metrics, traces or
    one of the quotas of ``tenant`` or ``principal`` need it, else ``None``."""
    if method != "tools/call":
        return None
    if gateway_settings().AUDIT_CALLS or observe.wants_records(tenant, principal):
        return CallRecord()
    return None


def record_call(record: CallRecord, tenant: Tenant, principal: Principal) -> None:
    """Write one row for a call that reached dispatch: one INSERT, whatever
    the call held (a value no database stores becomes a placeholder)."""
    if record.outcome is None:
        return
    observe.call_done(record, tenant)  # quotas given back, metrics, the span
    if not gateway_settings().AUDIT_CALLS:
        return
    row = call_row(record, tenant, principal)
    kept = _deferred.get()
    if kept is not None:
        kept.append(row)
        return
    try:
        _insert(row)
    except Exception:
        metrics.audit_write_failed(tenant.slug)
        raise


_deferred: ContextVar[list[dict[str, Any]] | None] = ContextVar(
    "mcp_audit_deferred", default=None
)


@contextmanager
def deferred() -> Iterator[list[dict[str, Any]]]:
    """In the block, :func:`record_call` keeps its row in the list yielded
    instead of writing it (everything else it does is done): the caller
    writes them with :func:`awrite` (the ASGI view, from the loop)."""
    rows: list[dict[str, Any]] = []
    token = _deferred.set(rows)
    try:
        yield rows
    finally:
        _deferred.reset(token)


async def awrite(rows: Sequence[dict[str, Any]], alias: str) -> None:
    """Write rows kept by :func:`deferred` from the event loop, in order,
    each committed before this returns (``audit.onloop``, which counts a
    failure).

    Raises:
        DatabaseError: as :func:`record_call`'s INSERT raises it.
    """
    for row in rows:
        await onloop.insert(row, alias, _statement, _without_refused)


def _statement(row: dict[str, Any], alias: str) -> tuple[str, list[Any]]:
    return _inserter(alias).statement(row, using=alias)


def call_row(
    record: CallRecord, tenant: Tenant, principal: Principal
) -> dict[str, Any]:
    """The audit row of a finished call, by column (the fields' attnames),
    with the time it is written: the values a ``ToolCall`` of the record
    would hold, without building one on every call (its ``__init__`` costs
    more than the INSERT's parameters)."""
    user, token_prefix = actor_of(principal)
    return {
        "tenant_id": tenant.pk,
        "tenant_slug": tenant.slug,
        "user": user,
        "token_prefix": token_prefix,
        "tool_name": record.tool_name,
        "engine_id": storable(record.engine_id)[:200],
        "engine_version": storable(record.engine_version)[:64],
        "outcome": record.outcome,
        "duration_ms": min(record.duration_ms, 2**31 - 1),
        "request_id": record.request_id,
        "protocol_version": record.protocol_version,
        "arguments": storable_json(record.arguments),
        "error_code": record.error_code,
        "created_at": timezone.now(),
    }


def _insert(row: dict[str, Any]) -> None:
    alias = router.db_for_write(ToolCall)
    inserter = _inserter(alias)
    try:
        inserter.insert_values(row, using=alias)
    except (DataError, IntegrityError):
        if connections[alias].in_atomic_block:
            raise  # its transaction is lost; the caller's to handle
        # Never lose the row: keep what is known, without what was refused.
        logger.exception("Audit row of %s refused; stored without it", _named(row))
        inserter.insert_values(_without_refused(row), using=alias)


def _without_refused(row: dict[str, Any]) -> dict[str, Any]:
    """What is known of a row the database refused, without what it refused."""
    arguments = row["arguments"]
    return {
        **row,
        "tenant_id": None,  # deleted meanwhile; the slug stays
        "arguments": None if arguments is None else UNSTORABLE,
    }


def _named(row: dict[str, Any]) -> str:
    """The row as the log names it (``ToolCall.__str__``)."""
    return f"{row['tenant_slug']}:{row['tool_name']} {row['outcome']}"


def _inserter(alias: str) -> CompiledInsert[ToolCall]:
    """The async INSERT when the row is its own transaction; inside a
    caller's transaction the commit is the caller's, left as it is."""
    if gateway_settings().AUDIT_DURABILITY != AUDIT_ASYNC:
        return _insert_call
    if connections[alias].in_atomic_block:
        return _insert_call
    return _insert_call_async


def storable_json(value: Any) -> Any:
    """``value`` when every database stores it as JSON, else the placeholder."""
    if value is None:
        return None
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError):
        return UNSTORABLE
    return value


async def arecord_call(
    record: CallRecord, tenant: Tenant, principal: Principal
) -> None:
    await sync_to_async(record_call)(record, tenant, principal)


def actor_of(principal: Principal) -> tuple[str, str]:
    """The user and token prefix a row keeps of ``principal``: the audit
    row's and a parked call's binding (``call_approvals``) alike."""
    return storable(principal.user or "")[:150], (principal.token or "")[:16]


def arguments_to_keep(tenant: Tenant, arguments: Mapping[str, Any]) -> Any:
    """The arguments as the tenant's switch allows storing them, or ``None``."""
    if not tenant.audit_arguments:
        return None
    return redacted_arguments(tenant, arguments)


def redacted_arguments(tenant: Tenant, arguments: Mapping[str, Any]) -> Any:
    """The arguments with the values of the tenant's ``audit_redacted_keys``
    replaced, whatever its ``audit_arguments`` switch: what staff are shown
    of a call they must judge (a parked call), never the redacted values."""
    keys = tenant.audit_redacted_keys
    names = {str(key).lower() for key in keys} if isinstance(keys, list) else set()
    return redact(arguments, frozenset(names))


def redact(value: Any, keys: frozenset[str]) -> Any:
    """Replace the value of every key in ``keys`` (any case, any depth)."""
    if isinstance(value, Mapping):
        return {
            storable(str(key)): REDACTED
            if str(key).lower() in keys
            else redact(item, keys)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item, keys) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return UNSTORABLE
    return storable(value) if isinstance(value, str) else value


def record_change(
    tenant: Tenant,
    action: str,
    engine_ids: Iterable[str],
    *,
    by: AbstractBaseUser | AnonymousUser | None,
    via: str,
) -> ExposureEvent:
    """Write one exposure change; call it inside the change's transaction."""
    actor = acting_user(by)
    return ExposureEvent.objects.create(
        tenant=tenant,
        tenant_slug=tenant.slug,
        action=action,
        engine_ids=sorted(engine_ids),
        catalog_version=tenant.catalog_version,
        actor=actor,
        actor_name=actor_name(actor),
        via=via,
    )


def record_changes(
    tenants: Sequence[Tenant],
    action: str,
    engine_ids: Iterable[str],
    *,
    by: AbstractBaseUser | AnonymousUser | None,
    via: str,
) -> None:
    """The same change to many tenants: one event each, written in bulk."""
    actor = acting_user(by)
    name = actor_name(actor)
    ids = sorted(engine_ids)
    ExposureEvent.objects.bulk_create(
        [
            ExposureEvent(
                tenant=tenant,
                tenant_slug=tenant.slug,
                action=action,
                engine_ids=ids,
                catalog_version=tenant.catalog_version,
                actor=actor,
                actor_name=name,
                via=via,
            )
            for tenant in tenants
        ],
        batch_size=2000,
    )


def prune(older_than_days: int) -> tuple[int, int]:
    """Delete calls and changes older than the given number of days, keeping
    each tenant's audit chain verifiable (``audit_chain.prune``)."""
    from mcp_gateway.audit_chain.prune import prune as prune_chains

    cutoff = timezone.now() - timedelta(days=older_than_days)
    deleted = prune_chains(cutoff)
    return deleted["call"], deleted["change"]


def actor_name(actor: User | None) -> str:
    """The name an audit row keeps of ``actor`` (it outlives the account)."""
    return actor.get_username()[:150] if actor is not None else ""


def acting_user(by: AbstractBaseUser | AnonymousUser | None) -> User | None:
    """The signed-in user behind a change, or ``None`` (anonymous, code)."""
    return cast("User", by) if by is not None and by.is_authenticated else None
