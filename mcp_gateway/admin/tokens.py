"""API tokens: issued with the secret shown once, revoked by an action."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from mcp_gateway import tokens
from mcp_gateway.admin.users import UserFieldMixin
from mcp_gateway.forms import ApiTokenForm
from mcp_gateway.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(UserFieldMixin, admin.ModelAdmin[ApiToken]):
    list_display = [
        "prefix",
        "tenant",
        "user",
        "name",
        "scopes",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    ]
    list_filter = ["tenant", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "tenant__slug"]  # and the user's login
    list_select_related = ["tenant", "user"]
    autocomplete_fields = ["tenant"]  # and the user, when the site allows
    actions = ["revoke_selected"]
    add_fields = ["tenant", "user", "name", "scopes", "expires_in"]
    view_fields = list_display

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Any:
        return self.view_fields if obj else self.add_fields

    def get_readonly_fields(
        self, request: HttpRequest, obj: ApiToken | None = None
    ) -> Any:
        return self.view_fields if obj else []

    def get_form(
        self,
        request: HttpRequest,
        obj: ApiToken | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[ModelForm[ApiToken]]:
        if obj is None:
            kwargs["form"] = ApiTokenForm
        return super().get_form(request, obj, change, **kwargs)

    def has_change_permission(
        self, request: HttpRequest, obj: ApiToken | None = None
    ) -> bool:
        return False  # a token is issued or revoked, never edited

    def save_model(
        self, request: HttpRequest, obj: ApiToken, form: Any, change: bool
    ) -> None:
        issued = tokens.issue(
            obj.tenant,
            obj.user,
            scopes=form.cleaned_data["scopes"],
            expires_in=form.cleaned_data["expires_in"],
            name=obj.name,
        )
        obj.pk = issued.token.pk
        obj.refresh_from_db()
        self.message_user(
            request,
            _("Copy the new token now; it is not shown again: %(secret)s")
            % {"secret": issued.secret},
            messages.WARNING,
        )

    @admin.action(description=_("Revoke selected tokens"))
    def revoke_selected(
        self, request: HttpRequest, queryset: QuerySet[ApiToken]
    ) -> None:
        revoked = [tokens.revoke(token.prefix) for token in queryset]
        self.message_user(request, f"Revoked {len(revoked)} token(s).")
