"""The ``user`` field of the gateway's admins, whatever the site's user model.

Users are searched by the model's ``USERNAME_FIELD`` (and its email field),
never by a ``username`` field the model may not have. The user picker is
the admin's autocomplete when the site registers its user model in the
admin with ``search_fields`` (as ``UserAdmin`` does); otherwise it is a raw
id input, so a site without a user admin passes ``check`` and is never
served a select of every user.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin import widgets
from django.contrib.auth import get_user_model
from django.db.models import ForeignKey
from django.http import HttpRequest

from mcp_gateway import users


def user_autocomplete(site: admin.AdminSite) -> bool:
    """Whether the site's user admin can serve the autocomplete."""
    model = get_user_model()
    if not site.is_registered(model):
        return False
    return bool(site.get_model_admin(model).search_fields)


class UserFieldMixin:
    """For a model admin or inline with a ``user`` foreign key."""

    admin_site: admin.AdminSite

    def get_search_fields(self, request: HttpRequest) -> list[str]:
        own = super().get_search_fields(request)  # type: ignore[misc]
        return [*users.search_fields(), *own]

    def get_autocomplete_fields(self, request: HttpRequest) -> list[str]:
        own = list(super().get_autocomplete_fields(request))  # type: ignore[misc]
        if user_autocomplete(self.admin_site):
            own.append("user")
        return own

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        if db_field.name == "user" and not user_autocomplete(self.admin_site):
            kwargs.setdefault(
                "widget",
                widgets.ForeignKeyRawIdWidget(
                    db_field.remote_field, self.admin_site, using=kwargs.get("using")
                ),
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]
