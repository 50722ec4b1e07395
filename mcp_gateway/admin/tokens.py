"""API tokens: issued with the secret shown once, revoked by an action.

The secret leaves the server in one response only: the page that answers
the POST which created the token (never a message, which Django keeps in a
signed but readable cookie, and never a redirect's next page).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _

from mcp_gateway import tokens
from mcp_gateway.admin.permissions import ActionPermissions
from mcp_gateway.admin.users import UserFieldMixin
from mcp_gateway.forms import ApiTokenForm
from mcp_gateway.models import ApiToken

ISSUED_TEMPLATE = "admin/mcp_gateway/apitoken/issued.html"


@admin.register(ApiToken)
class ApiTokenAdmin(ActionPermissions, UserFieldMixin, admin.ModelAdmin[ApiToken]):
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
    add_fields = [
        "tenant",
        "user",
        "name",
        "scopes",
        "expires_in",
        "calls_per_day",
        "calls_per_month",
    ]
    view_fields = [*list_display, "calls_per_day", "calls_per_month"]

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
        form = super().get_form(request, obj, change, **kwargs)
        # modelform_factory made this class for this request alone.
        form.issued_by_superuser = bool(getattr(request.user, "is_superuser", False))  # type: ignore[attr-defined]
        return form

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
            calls_per_day=obj.calls_per_day,
            calls_per_month=obj.calls_per_month,
        )
        obj.pk = issued.token.pk
        obj.refresh_from_db()
        obj.issued_secret = issued.secret  # type: ignore[attr-defined]

    def response_add(
        self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        """The one page that shows the new secret; never cached, never again."""
        context = {
            **self.admin_site.each_context(request),
            "title": _("Copy the new token now"),
            "opts": self.opts,
            "token": obj,
            "secret": getattr(obj, "issued_secret", ""),
        }
        response = TemplateResponse(request, ISSUED_TEMPLATE, context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(
        description=_("Revoke selected tokens"), permissions=["change_apitoken"]
    )
    def revoke_selected(
        self, request: HttpRequest, queryset: QuerySet[ApiToken]
    ) -> None:
        revoked = [tokens.revoke(token.prefix) for token in queryset]
        self.message_user(request, f"Revoked {len(revoked)} token(s).")
