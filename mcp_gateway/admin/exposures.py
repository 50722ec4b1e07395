"""Exposures: added with ``bookkeeping.expose``, deleted with ``unexpose``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from mcp_gateway import bookkeeping
from mcp_gateway.admin.permissions import ActionPermissions
from mcp_gateway.admin.status import StatusFilter, status_html
from mcp_gateway.errors import BookkeepingError
from mcp_gateway.forms import ExposureForm
from mcp_gateway.models import Exposure, Tenant


@admin.register(Exposure)
class ExposureAdmin(ActionPermissions, admin.ModelAdmin[Exposure]):
    list_display = [
        "tool_name",
        "engine_id",
        "tenant",
        "engine_version",
        "status",
        "exposed_by",
        "created_at",
    ]
    list_filter = [StatusFilter, "tenant"]
    search_fields = ["tool_name", "engine_id", "tenant__slug", "tenant__name"]
    list_select_related = ["tenant", "exposed_by"]
    autocomplete_fields = ["tenant"]
    filter_horizontal = ["groups"]
    actions = ["confirm_selected"]
    add_fields = ["tenant", "engine_id"]
    view_fields = [
        "tenant",
        "engine_id",
        "tool_name",
        "status",
        "engine_version",
        "fingerprint",
        "exposed_by",
        "created_at",
    ]

    @admin.display(description=_("status"))
    def status(self, obj: Exposure) -> SafeString:
        return status_html(obj)

    def get_fields(self, request: HttpRequest, obj: Exposure | None = None) -> Any:
        return [*self.view_fields, "groups"] if obj else self.add_fields

    def get_readonly_fields(
        self, request: HttpRequest, obj: Exposure | None = None
    ) -> Any:
        return self.view_fields if obj else []

    def get_form(
        self,
        request: HttpRequest,
        obj: Exposure | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[ModelForm[Exposure]]:
        if obj is None:
            kwargs["form"] = ExposureForm
        return super().get_form(request, obj, change, **kwargs)

    def add_view(
        self,
        request: HttpRequest,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            return super().add_view(request, form_url, extra_context)
        except BookkeepingError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(_add_url(request.POST.get("tenant")))

    def save_model(
        self, request: HttpRequest, obj: Exposure, form: Any, change: bool
    ) -> None:
        if change:
            return  # only its groups change, in save_related
        exposure = bookkeeping.expose(
            obj.tenant, obj.engine_id, by=request.user, via="admin"
        )
        obj.pk = exposure.pk
        obj.refresh_from_db()

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        if change:
            bookkeeping.restrict(form.instance, form.cleaned_data["groups"])

    def delete_model(self, request: HttpRequest, obj: Exposure) -> None:
        bookkeeping.unexpose(obj.tenant, obj.engine_id, by=request.user, via="admin")

    def delete_queryset(
        self, request: HttpRequest, queryset: QuerySet[Exposure]
    ) -> None:
        by_tenant: dict[Tenant, list[str]] = defaultdict(list)
        for exposure in queryset.select_related("tenant"):
            by_tenant[exposure.tenant].append(exposure.engine_id)
        for tenant, engine_ids in by_tenant.items():
            bookkeeping.unexpose_many(tenant, engine_ids, by=request.user, via="admin")

    @admin.action(
        description=_("Re-confirm selected changed exposures"),
        permissions=["change_exposure"],
    )
    def confirm_selected(
        self, request: HttpRequest, queryset: QuerySet[Exposure]
    ) -> None:
        states = bookkeeping.states(queryset.select_related("tenant"))
        for state in states:
            if not state.changed:
                continue
            try:
                bookkeeping.confirm(state.exposure, by=request.user, via="admin")
            except BookkeepingError as exc:
                self.message_user(request, exc.message, messages.ERROR)
        count = sum(state.changed for state in states)
        self.message_user(request, f"Re-confirmed {count} changed exposure(s).")


def _add_url(tenant: str | None) -> str:
    url = reverse("admin:mcp_gateway_exposure_add")
    return f"{url}?tenant={tenant}" if tenant and tenant.isdigit() else url
