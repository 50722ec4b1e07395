"""Principal changes, published on the change bus from model signals.

Connected by ``McpGatewayConfig.ready()``. Every save or delete through
the ORM publishes in its own transaction (so a rolled-back change
publishes nothing):

- an API token revoked (``revoked_at`` set) or deleted;
- a user deactivated (``is_active`` turned off), deleted, or its groups
  changed (either side of the many-to-many, or a group deleted);
- a membership deleted, or its role (or tenant, or user) changed;
- a tenant disabled, enabled, deleted or otherwise saved (its limits,
  origins and audit settings travel with every kept principal).

A token that merely expires publishes nothing: consumers compare its
``expires_at`` with the clock. ``QuerySet.update()`` and raw SQL send no
model signals and publish nothing; code that changes these rows that way
publishes itself (``bus.publish(bus.PrincipalChanged(...))``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.db.models.signals import (
    m2m_changed,
    post_delete,
    post_save,
    pre_delete,
    pre_save,
)

from mcp_gateway import bookkeeping, bus, catalog, principals
from mcp_gateway.bus import PrincipalChanged
from mcp_gateway.bus import PrincipalKind as Kind
from mcp_gateway.models import ApiToken, Membership, Tenant

PENDING = "_mcp_gateway_bus_pending"
CLEARED = "_mcp_gateway_bus_cleared"


def connect() -> None:
    """Connect the receivers (idempotent)."""
    user_model = get_user_model()
    for model, before in (
        (ApiToken, _token_saving),
        (Tenant, _tenant_saving),
        (Membership, _membership_saving),
        (user_model, _user_saving if _has_field(user_model, "is_active") else None),
    ):
        name = model._meta.label_lower
        if before is not None:
            pre_save.connect(before, sender=model, dispatch_uid=f"bus-pre-{name}")
        post_save.connect(_saved, sender=model, dispatch_uid=f"bus-post-{name}")
        post_delete.connect(_deleted, sender=model, dispatch_uid=f"bus-del-{name}")
    groups = _groups_through(user_model)
    if groups is not None:
        m2m_changed.connect(_groups_changed, sender=groups, dispatch_uid="bus-groups")
        pre_delete.connect(_group_deleting, sender=Group, dispatch_uid="bus-group")
    catalog.drift_found.connect(_drift_found, dispatch_uid="drift-record")


def _drift_found(tenant: Tenant, engine_ids: list[str], **kwargs: Any) -> None:
    bookkeeping.record_drift(tenant, engine_ids)


def _token_saving(instance: ApiToken, raw: bool, **kwargs: Any) -> None:
    if raw or instance.revoked_at is None:
        return
    old = _stored(instance, ("revoked_at",), **kwargs)
    if old is not None and old["revoked_at"] is None:
        _later(instance, _token_event(Kind.TOKEN_REVOKED, instance))


def _tenant_saving(instance: Tenant, raw: bool, **kwargs: Any) -> None:
    if raw or instance._state.adding or instance.pk is None:
        return
    old = _stored(instance, ("is_active",), **kwargs)
    if old is not None and old["is_active"] != instance.is_active:
        kind = Kind.TENANT_ENABLED if instance.is_active else Kind.TENANT_DISABLED
    else:  # kept principals carry the tenant's settings: limits, origins
        kind = Kind.TENANT_CHANGED
    _later(instance, PrincipalChanged(kind, tenant=instance.pk))


def _membership_saving(instance: Membership, raw: bool, **kwargs: Any) -> None:
    fields = ("tenant_id", "user_id", "role")
    old = None if raw else _stored(instance, fields, **kwargs)
    if old is None or old == {f: getattr(instance, f) for f in fields}:
        return
    before = (old["tenant_id"], old["user_id"])
    after = (instance.tenant_id, instance.user_id)
    if before == after:
        _later(instance, _membership_event(Kind.MEMBERSHIP_CHANGED, *after))
        return
    _later(instance, _membership_event(Kind.MEMBERSHIP_REMOVED, *before))
    _later(instance, _membership_event(Kind.MEMBERSHIP_CHANGED, *after))


def _user_saving(instance: models.Model, raw: bool, **kwargs: Any) -> None:
    if raw or getattr(instance, "is_active", True):
        return
    old = _stored(instance, ("is_active",), **kwargs)
    if old is not None and old["is_active"]:
        event = PrincipalChanged(Kind.USER_DEACTIVATED, user=_ref(instance.pk))
        _later(instance, event)


def _saved(instance: models.Model, using: str, **kwargs: Any) -> None:
    for event in instance.__dict__.pop(PENDING, ()):
        _publish(event, using)


def _deleted(instance: models.Model, using: str, **kwargs: Any) -> None:
    _publish(_deletion(instance), using)


def _deletion(instance: models.Model) -> PrincipalChanged:
    if isinstance(instance, ApiToken):
        return _token_event(Kind.TOKEN_DELETED, instance)
    if isinstance(instance, Membership):
        return _membership_event(
            Kind.MEMBERSHIP_REMOVED, instance.tenant_id, instance.user_id
        )
    if isinstance(instance, Tenant):
        return PrincipalChanged(Kind.TENANT_DELETED, tenant=instance.pk)
    return PrincipalChanged(Kind.USER_DELETED, user=_ref(instance.pk))


def _groups_changed(
    instance: models.Model,
    action: str,
    reverse: bool,
    pk_set: set[Any] | None,
    using: str,
    **kwargs: Any,
) -> None:
    if action == "pre_clear" and isinstance(instance, Group):  # for post_clear
        instance.__dict__[CLEARED] = list(_members(instance, using))
        return
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    if action != "post_clear" and not pk_set:
        return  # nothing was added or removed
    if not reverse:
        users: Iterable[Any] = [instance.pk]
    elif action == "post_clear":
        users = instance.__dict__.pop(CLEARED, ())
    else:
        users = pk_set or ()
    _publish_groups_changed(users, using)


def _group_deleting(instance: Group, using: str, **kwargs: Any) -> None:
    _publish_groups_changed(_members(instance, using), using)


def _publish_groups_changed(users: Iterable[Any], using: str) -> None:
    for user in users:
        event = PrincipalChanged(Kind.USER_GROUPS_CHANGED, user=_ref(user))
        _publish(event, using)


def _members(group: Group, using: str) -> Iterable[Any]:
    manager = get_user_model()._default_manager.db_manager(using)
    return manager.filter(groups=group).values_list("pk", flat=True)


def _stored(
    instance: models.Model,
    fields: tuple[str, ...],
    *,
    using: str,
    update_fields: Iterable[str] | None,
    **kwargs: Any,
) -> dict[str, Any] | None:
    """The row's stored values of ``fields`` before this save, if relevant."""
    if instance._state.adding or instance.pk is None:
        return None
    names = {f.removesuffix("_id") for f in fields} | set(fields)
    if update_fields is not None and not names & set(update_fields):
        return None
    rows = type(instance)._base_manager.db_manager(using).filter(pk=instance.pk)
    return rows.values(*fields).first()


def _later(instance: models.Model, event: PrincipalChanged) -> None:
    """Publish ``event`` once the save has written the row."""
    instance.__dict__.setdefault(PENDING, []).append(event)


def _token_event(kind: Kind, token: ApiToken) -> PrincipalChanged:
    return PrincipalChanged(
        kind, tenant=token.tenant_id, user=_ref(token.user_id), token=token.prefix
    )


def _membership_event(kind: Kind, tenant: int, user: Any) -> PrincipalChanged:
    return PrincipalChanged(kind, tenant=tenant, user=_ref(user))


def _ref(pk: Any) -> int | str:
    return pk if isinstance(pk, int) and not isinstance(pk, bool) else str(pk)


def _has_field(model: type[models.Model], name: str) -> bool:
    try:
        model._meta.get_field(name)
    except FieldDoesNotExist:
        return False
    return True


def _groups_through(user_model: type[models.Model]) -> Any:
    try:
        field = user_model._meta.get_field("groups")
    except FieldDoesNotExist:
        return None
    if not field.many_to_many or field.related_model is not Group:
        return None
    return getattr(user_model, "groups").through  # noqa: B009


def _publish(event: PrincipalChanged, using: str) -> None:
    """Forget in this process at once; every other one hears the bus."""
    principals.forget(event)
    bus.publish(event, using=using)
