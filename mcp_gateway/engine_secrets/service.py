"""Set, replace, delete and re-encrypt secrets: the one way they change.

Every change commits with a ``bus.SecretsChanged`` for its tenant and
engine, so every process re-reads them. No function here returns a value
once stored, and no error names one.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from engines_app.engine import required_secrets
from engines_app.registry import default_registry
from mcp_gateway import bus
from mcp_gateway.audit.log import acting_user, actor_name
from mcp_gateway.engine_secrets import store
from mcp_gateway.engine_secrets.keys import require
from mcp_gateway.engine_secrets.models import EngineSecret
from mcp_gateway.models import Tenant

MAX_VALUE_CHARS = 16_384


class SecretError(ValueError):
    """A secret cannot be set as asked; the message never holds its value."""


@sensitive_variables("value", "ciphertext")
def set_secret(
    tenant: Tenant,
    engine_id: str,
    name: str,
    value: str,
    *,
    by: AbstractBaseUser | AnonymousUser | None = None,
) -> EngineSecret:
    """Store (or replace) a secret of an installed engine that declares it.

    Raises:
        SecretError: unknown engine, undeclared name, empty or oversized value.
        SecretKeyError: no keys are set.
    """
    declared = _declared(engine_id)
    if name not in declared:
        listed = ", ".join(declared) or "none"
        raise SecretError(
            f"Engine {engine_id!r} declares no secret named {name!r} "
            f"(it declares: {listed})."
        )
    if not isinstance(value, str) or not value:
        raise SecretError("A secret's value must be a non-empty string.")
    if len(value) > MAX_VALUE_CHARS or "\x00" in value:
        raise SecretError(
            f"A secret's value must be at most {MAX_VALUE_CHARS:,} characters "
            "and hold no NUL character."
        )
    ring = require()
    ciphertext = ring.encrypt(value)
    actor = acting_user(by)
    with transaction.atomic():
        secret, _ = EngineSecret.objects.update_or_create(
            tenant=tenant,
            engine_id=engine_id,
            name=name,
            defaults={
                "ciphertext": ciphertext,
                "key_id": ring.newest,
                "set_at": timezone.now(),
                "set_by": actor,
                "set_by_name": actor_name(actor),
            },
        )
        changed(tenant.pk, engine_id)
    return secret


def delete_secret(tenant: Tenant, engine_id: str, name: str) -> bool:
    """Delete one secret; ``False`` when there was none."""
    with transaction.atomic():
        deleted, _ = EngineSecret.objects.filter(
            tenant=tenant, engine_id=engine_id, name=name
        ).delete()
        if deleted:
            changed(tenant.pk, engine_id)
    return bool(deleted)


def rotate() -> tuple[int, int]:
    """Re-encrypt every secret not under the newest key; (rotated, total).

    Raises:
        SecretKeyError: no keys are set, or a secret does not open with them.
    """
    ring = require()
    rotated = 0
    with transaction.atomic():
        rows = EngineSecret.objects.select_for_update().order_by("pk")
        for secret in rows.only("pk", "tenant_id", "engine_id", "ciphertext", "key_id"):
            if secret.key_id == ring.newest:
                continue
            secret.ciphertext = ring.rotate(secret.ciphertext)
            secret.key_id = ring.newest
            secret.save(update_fields=["ciphertext", "key_id"])
            changed(secret.tenant_id, secret.engine_id)
            rotated += 1
        total = EngineSecret.objects.count()
    return rotated, total


def changed(tenant_id: int, engine_id: str) -> None:
    """Tell every process, this one included, once the transaction commits."""
    bus.publish(bus.SecretsChanged(tenant=tenant_id, engine=engine_id))
    transaction.on_commit(lambda: store.drop(tenant_id, engine_id))


def missing(
    tenant: Tenant, engine: Any, set_names: set[str] | None = None
) -> list[str]:
    """The secrets ``engine`` declares that ``tenant`` has not set (a query
    unless ``set_names`` is given)."""
    declared = required_secrets(engine)
    if not declared:
        return []
    if set_names is None:
        set_names = set(
            EngineSecret.objects.filter(tenant=tenant, engine_id=engine.id).values_list(
                "name", flat=True
            )
        )
    return [name for name in declared if name not in set_names]


def missing_by_engine(tenant: Tenant) -> dict[str, list[str]]:
    """Exposed engine id → declared secrets it lacks, for ``tenant`` (two
    queries)."""
    stored: dict[str, set[str]] = {}
    for engine_id, name in EngineSecret.objects.filter(tenant=tenant).values_list(
        "engine_id", "name"
    ):
        stored.setdefault(engine_id, set()).add(name)
    found = {}
    for engine_id in tenant.exposures.values_list("engine_id", flat=True):
        engine = default_registry.get(engine_id)
        lacking = missing(tenant, engine, stored.get(engine_id, set()))
        if engine is not None and lacking:
            found[engine_id] = lacking
    return found


def _declared(engine_id: str) -> tuple[str, ...]:
    engine = default_registry.get(engine_id)
    if engine is None:
        raise SecretError(f"No installed engine has the id {engine_id!r}.")
    return required_secrets(engine)
