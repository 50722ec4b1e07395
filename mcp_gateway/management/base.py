"""Helpers the management commands share: lookups that fail as one line."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from mcp_gateway.errors import BookkeepingError
from mcp_gateway.models import Tenant


def get_tenant(slug: str) -> Tenant:
    """Return the tenant with ``slug``, active or not.

    Raises:
        CommandError: no such tenant.
    """
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise CommandError(f"No tenant with slug {slug!r}.")
    return tenant


USER_HELP = (
    "The user's login: the value of the user model's USERNAME_FIELD "
    "(a username, or an email on a site that signs in by email)."
)


def get_user(username: str, *, create: bool = False) -> User:
    """Return the user whose ``USERNAME_FIELD`` is ``username``.

    With ``create``, a missing user is created without a password through
    the model's manager (``create_user(<USERNAME_FIELD>=username)``).

    Raises:
        CommandError: no such user and ``create`` is false.
    """
    model = get_user_model()
    field = model.USERNAME_FIELD
    user = model._default_manager.filter(**{field: username}).first()
    if user is None and create:
        user = model._default_manager.create_user(**{field: username})
    if user is None:
        raise CommandError(
            f"No user named {username!r}; pass --create-user to create one."
        )
    return user


@contextmanager
def bookkeeping_errors() -> Iterator[None]:
    """Turn a bookkeeping error into the one-line error of a command."""
    try:
        yield
    except BookkeepingError as exc:
        raise CommandError(exc.message) from exc


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Format rows as a plain left-aligned text table."""
    lines = [list(headers), *([str(cell) for cell in row] for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) for cell, width in zip(line, widths, strict=True)
        ).rstrip()
        for line in lines
    )


def validation_message(exc: ValidationError) -> str:
    """Flatten a model validation error into one line."""
    if not hasattr(exc, "error_dict"):
        return " ".join(dict.fromkeys(exc.messages))
    return " ".join(
        f"{field}: {' '.join(dict.fromkeys(messages))}"
        for field, messages in exc.message_dict.items()
    )
