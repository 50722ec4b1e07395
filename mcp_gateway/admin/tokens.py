"""API tokens: issued with the secret shown once, revoked by an action.

The secret leaves the server in one response only: the page that answers
the POST which created the token (never a message, which Django keeps in a
signed but readable cookie, and never a redirect's next page).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.forms import ModelForm
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from mcp_gateway import permissions, tokens
from mcp_gateway.admin.permissions import ActionPermissions
from mcp_gateway.admin.users import UserFieldMixin
from mcp_gateway.forms import ApiTokenForm
from mcp_gateway.models import ApiToken
from mcp_gateway.oauth.resource import resource_url

ACTIVE, EXPIRED, REVOKED = "active", "expired", "revoked"
STATUS_LABELS = {ACTIVE: _("Active"), EXPIRED: _("Expired"), REVOKED: _("Revoked")}


def token_status(token: ApiToken) -> str:
    if token.revoked_at is not None:
        return REVOKED
    if token.expires_at is not None and token.expires_at <= timezone.now():
        return EXPIRED
    return ACTIVE


def client_config(url: str, secret: str) -> str:
    """The ready-to-paste configuration of an MCP client (``mcpServers``)."""
    server = {
        "type": "http",
        "url": url,
        "headers": {"Authorization": f"Bearer {secret}"},
    }
    return json.dumps({"mcpServers": {"gateway": server}}, indent=2)


class TokenStatusFilter(admin.SimpleListFilter):
    title = _("status")
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return list(STATUS_LABELS.items())

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        expired = Q(expires_at__isnull=False, expires_at__lte=now)
        value = self.value()
        if value == REVOKED:
            return queryset.filter(revoked_at__isnull=False)
        if value == EXPIRED:
            return queryset.filter(expired, revoked_at__isnull=True)
        if value == ACTIVE:
            return queryset.filter(revoked_at__isnull=True).exclude(expired)
        return queryset


ISSUED_TEMPLATE = "admin/mcp_gateway/apitoken/issued.html"
REVOKE_TEMPLATE = "admin/mcp_gateway/apitoken/revoke.html"


@admin.register(ApiToken)
class ApiTokenAdmin(ActionPermissions, UserFieldMixin, admin.ModelAdmin[ApiToken]):
    list_display = [
        "prefix",
        "tenant",
        "user",
        "name",
        "status",
        "scope_list",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    ]
    list_filter = [TokenStatusFilter, "tenant"]
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
    view_fields = [*list_display, "calls_per_day", "calls_per_month", "revoke_button"]

    class Media:
        css = {"all": ["mcp_gateway/admin.css"]}
        js = ["mcp_gateway/admin.js"]

    @admin.display(description=_("Status"))
    def status(self, obj: ApiToken) -> str:
        return str(STATUS_LABELS[token_status(obj)])

    @admin.display(description=_("Scopes"))
    def scope_list(self, obj: ApiToken) -> str:
        scopes = obj.scopes if isinstance(obj.scopes, list) else []
        return ", ".join(str(scope) for scope in scopes) or "-"

    @admin.display(description=_("Revoke"))
    def revoke_button(self, obj: ApiToken) -> str:
        if obj.revoked_at is not None:
            return gettext("Revoked at %(time)s.") % {
                "time": timezone.localtime(obj.revoked_at).strftime("%Y-%m-%d %H:%M:%S")
            }
        url = reverse("admin:mcp_gateway_apitoken_revoke", args=[obj.pk])
        return format_html(
            '<a class="button" href="{}">{}</a>', url, gettext("Revoke this token")
        )

    def get_urls(self) -> list[URLPattern]:
        revoke = path(
            "<int:pk>/revoke/",
            self.admin_site.admin_view(self.revoke_view),
            name="mcp_gateway_apitoken_revoke",
        )
        return [revoke, *super().get_urls()]

    def revoke_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The token page's "Revoke": asks, then revokes."""
        needs = permissions.admin_action("apitoken", "revoke_selected").needs
        if not permissions.allows(request.user, needs):
            raise PermissionDenied
        token = get_object_or_404(ApiToken.objects.select_related("tenant"), pk=pk)
        page = reverse("admin:mcp_gateway_apitoken_change", args=[pk])
        if request.method == "POST":
            self._revoke(request, [token])
            return HttpResponseRedirect(page)
        if request.method not in ("GET", "HEAD"):
            raise Http404
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Revoke this token?"),
            "opts": self.opts,
            "token": token,
            "cancel_url": page,
        }
        return TemplateResponse(request, REVOKE_TEMPLATE, context)

    def _revoke(self, request: HttpRequest, chosen: list[ApiToken]) -> None:
        already = [t for t in chosen if t.revoked_at is not None]
        fresh = [t for t in chosen if t.revoked_at is None]
        for token in fresh:
            tokens.revoke(token.prefix)
        if fresh:
            self.message_user(
                request,
                gettext("Revoked %(n)s token(s): %(prefixes)s.")
                % {"n": len(fresh), "prefixes": ", ".join(t.prefix for t in fresh)},
                messages.SUCCESS,
            )
        if already:
            self.message_user(
                request,
                gettext("Already revoked, unchanged: %(prefixes)s.")
                % {"prefixes": ", ".join(t.prefix for t in already)},
                messages.WARNING,
            )

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
        secret = getattr(obj, "issued_secret", "")
        url = resource_url(obj.tenant.slug)
        context = {
            **self.admin_site.each_context(request),
            "title": _("Copy the new token now"),
            "opts": self.opts,
            "token": obj,
            "secret": secret,
            "mcp_url": url,
            "header": f"Authorization: Bearer {secret}",
            "client_config": client_config(url, secret),
            "media": self.media,
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
        self._revoke(request, list(queryset))
