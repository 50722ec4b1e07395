"""The site's user model as the app refers to it: by its ``USERNAME_FIELD``.

A site may sign in by email (``USERNAME_FIELD = "email"``) and have no
``username`` field at all; searches, lookups and the API's ``username``
values use whatever field the model names, never ``username`` itself.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist, ValidationError


def login_field() -> str:
    """The name of the user model's ``USERNAME_FIELD``."""
    return str(get_user_model().USERNAME_FIELD)


def search_fields(prefix: str = "user__") -> list[str]:
    """The login field and, when the model has a distinct one, the email."""
    model = get_user_model()
    names = [login_field()]
    email = model.get_email_field_name()
    if email not in names and _has_field(email):
        names.append(email)
    return [f"{prefix}{name}" for name in names]


def _has_field(name: str) -> bool:
    try:
        get_user_model()._meta.get_field(name)
    except FieldDoesNotExist:
        return False
    return True


def session_user(user_id: Any) -> Any:
    """The user a session names, loaded as ``ModelBackend.get_user`` does.

    The gateway's backends never start a session themselves, but Django
    stores the first configured backend in a session that
    ``Client.force_login()`` (or a site's own ``login()`` without
    ``authenticate()``) starts, and asks that backend to load the user back
    on every request: returning None there would make such a session
    silently anonymous.
    """
    model = get_user_model()
    try:
        user = model._default_manager.get(pk=user_id)
    except (model.DoesNotExist, ValueError, ValidationError):
        return None
    return user if getattr(user, "is_active", True) else None
