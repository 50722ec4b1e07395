"""The audit log, read-only: tool calls and exposure changes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mcp_gateway.audit.models import ExposureEvent, ToolCall

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
PERIODS = {
    "1h": (_("Last hour"), timedelta(hours=1)),
    "24h": (_("Last 24 hours"), timedelta(hours=24)),
    "7d": (_("Last 7 days"), timedelta(days=7)),
}


def seconds(moment: Any) -> str:
    """A time with seconds, in the site's time zone, e.g. 2026-12-02 05:40:12."""
    return timezone.localtime(moment).strftime(TIME_FORMAT) if moment else "-"


class PeriodFilter(admin.SimpleListFilter):
    """Last hour, 24 hours or 7 days; a custom range is
    ``?created_at__gte=…&created_at__lt=…`` (the chart's links use it)."""

    title = _("time")
    parameter_name = "period"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, Any]]:
        return [(key, label) for key, (label, _delta) in PERIODS.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        period = PERIODS.get(self.value() or "")
        if period is None:
            return queryset
        return queryset.filter(created_at__gte=timezone.now() - period[1])


class ToolFilter(admin.SimpleListFilter):
    title = _("tool")
    parameter_name = "tool_name"
    LIMIT = 100

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, Any]]:
        names = (
            ToolCall.objects.exclude(engine_id="")
            .order_by("tool_name")
            .values_list("tool_name", flat=True)
            .distinct()[: self.LIMIT]
        )
        return [(name, name) for name in names]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(tool_name=value) if value else queryset


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    """Rows are written by the gateway and removed by ``mcp_audit prune``."""

    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("Time"), ordering="created_at")
    def time(self, obj: Any) -> str:
        return seconds(obj.created_at)


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = [
        "time",
        "tenant_slug",
        "tool_name",
        "outcome",
        "error_code",
        "duration_ms",
        "user",
        "token_prefix",
        "protocol_version",
    ]
    list_filter = [PeriodFilter, ToolFilter, "outcome", "protocol_version", "tenant"]
    search_fields = [
        "tenant_slug",
        "tool_name",
        "engine_id",
        "user",
        "token_prefix",
        "error_code",
    ]


@admin.register(ExposureEvent)
class ExposureEventAdmin(ReadOnlyAdmin):
    list_display = [
        "time",
        "tenant_slug",
        "action",
        "engines",
        "actor_name",
        "via",
        "catalog_version",
    ]
    list_filter = [PeriodFilter, "action", "via", "tenant"]
    search_fields = ["tenant_slug", "actor_name"]

    @admin.display(description=_("Engines"))
    def engines(self, obj: ExposureEvent) -> str:
        return ", ".join(str(engine_id) for engine_id in obj.engine_ids)
