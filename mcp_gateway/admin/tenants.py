"""Tenants, with their members and exposures inline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from mcp_gateway import bookkeeping
from mcp_gateway.admin.status import status_html
from mcp_gateway.errors import BookkeepingError
from mcp_gateway.forms import TenantForm
from mcp_gateway.models import Exposure, Membership, Tenant


class MembershipInline(admin.TabularInline[Membership, Tenant]):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]


class ExposureInline(admin.TabularInline[Exposure, Tenant]):
    """Read-only: exposures change only through the bookkeeping service."""

    model = Exposure
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["tool_name", "engine_id", "engine_version", "status", "created_at"]
    readonly_fields = [
        "tool_name",
        "engine_id",
        "engine_version",
        "status",
        "created_at",
    ]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("status"))
    def status(self, obj: Exposure) -> SafeString:
        return status_html(obj)


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin[Tenant]):
    form = TenantForm
    list_display = [
        "slug",
        "name",
        "is_active",
        "exposure_count",
        "catalog_version",
        "created_at",
    ]
    list_filter = ["is_active"]
    search_fields = ["slug", "name"]
    readonly_fields = ["catalog_version", "expose_link"]
    inlines = [MembershipInline, ExposureInline]
    actions = ["expose_all", "unexpose_all", "confirm_changed"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tenant]:
        return super().get_queryset(request).annotate(_exposures=Count("exposures"))

    @admin.display(description=_("exposures"), ordering="_exposures")
    def exposure_count(self, obj: Tenant) -> int:
        return int(getattr(obj, "_exposures", 0))

    @admin.display(description=_("expose"))
    def expose_link(self, obj: Tenant) -> str:
        if obj.pk is None:
            return "-"
        url = f"{reverse('admin:mcp_gateway_exposure_add')}?tenant={obj.pk}"
        return format_html('<a href="{}">{}</a>', url, _("Expose an engine"))

    @admin.action(description=_("Expose all installed engines"))
    def expose_all(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        def run(tenant: Tenant) -> str:
            created = bookkeeping.expose_all(tenant, by=request.user)
            return f"{tenant}: exposed {len(created)} new engine(s)."

        self._each(request, queryset, run)

    @admin.action(description=_("Unexpose all"))
    def unexpose_all(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        def run(tenant: Tenant) -> str:
            return f"{tenant}: unexposed {bookkeeping.clear(tenant)} engine(s)."

        self._each(request, queryset, run)

    @admin.action(description=_("Re-confirm changed exposures"))
    def confirm_changed(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        def run(tenant: Tenant) -> str:
            states = bookkeeping.states(tenant.exposures.all())
            changed = [state.exposure for state in states if state.changed]
            for exposure in changed:
                bookkeeping.confirm(exposure)
            return f"{tenant}: re-confirmed {len(changed)} exposure(s)."

        self._each(request, queryset, run)

    def _each(
        self,
        request: HttpRequest,
        queryset: QuerySet[Tenant],
        run: Callable[[Tenant], str],
    ) -> None:
        """Run one bookkeeping change per tenant; report each as a message."""
        for tenant in queryset:
            try:
                self.message_user(request, run(tenant), messages.SUCCESS)
            except BookkeepingError as exc:
                self.message_user(request, f"{tenant}: {exc.message}", messages.ERROR)
