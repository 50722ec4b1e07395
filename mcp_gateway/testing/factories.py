"""A tenant with engines exposed, a member, a token: for a site's tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import EmailField

from mcp_gateway import bookkeeping, tokens
from mcp_gateway import scopes as known_scopes
from mcp_gateway.models import Membership, Tenant

ALL = "__all__"


def make_tenant(
    slug: str = "test-tenant",
    *,
    name: str = "",
    engines: Sequence[str] | str = ALL,
    **fields: Any,
) -> Tenant:
    """Create a tenant exposing ``engines`` (engine ids; by default every
    installed engine), through the bookkeeping service as staff would."""
    tenant = Tenant.objects.create(slug=slug, name=name or slug, **fields)
    if engines == ALL:
        bookkeeping.expose_all(tenant)
    elif engines:
        bookkeeping.expose_many(tenant, list(engines))
    return tenant


def make_member(
    tenant: Tenant, login: str | None = None, *, role: str = "member", **fields: Any
) -> Any:
    """Create a user and make it a member of ``tenant``.

    ``login`` is the value of the user model's ``USERNAME_FIELD`` (by
    default ``mcp-user``, or ``mcp-user@example.com`` on a model that signs
    in by email); other ``fields`` go to ``create_user``.
    """
    model = get_user_model()
    field = model.USERNAME_FIELD
    if login is None:
        is_email = isinstance(model._meta.get_field(field), EmailField)
        login = "mcp-user@example.com" if is_email else "mcp-user"
    user = model._default_manager.create_user(**{field: login}, **fields)
    Membership.objects.create(tenant=tenant, user=user, role=role)
    return user


def issue_token(
    tenant: Tenant, user: Any, *, scopes: Sequence[str] = known_scopes.TOKEN_DEFAULT
) -> str:
    """Issue an API token for ``user`` on ``tenant``; return its secret."""
    return tokens.issue(tenant, user, scopes=scopes, name="tests").secret
