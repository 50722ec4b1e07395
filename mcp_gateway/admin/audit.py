"""The audit log, read-only: tool calls and exposure changes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, time, timedelta
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
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
    """Last hour, 24 hours or 7 days, or a custom range
    ``?created_at__gte=…&created_at__lt=…`` (a plain GET form; the chart's links
    use it too). An unreadable bound is a message and filters nothing."""

    title = _("time")
    parameter_name = "period"
    template = "admin/mcp_gateway/period_filter.html"
    BOUNDS = ("created_at__gte", "created_at__lt")
    HIDDEN = {parameter_name, *BOUNDS, "p", "e"}

    def __init__(
        self,
        request: HttpRequest,
        params: dict[str, Any],
        model: Any,
        model_admin: admin.ModelAdmin[Any],
    ) -> None:
        super().__init__(request, params, model, model_admin)
        self.request = request
        self.raw: dict[str, str] = {}
        for name in self.BOUNDS:
            if name in params:
                self.raw[name] = params.pop(name)[-1]
        self.bounds: dict[str, datetime] = {}
        bad = [
            name for name, raw in self.raw.items() if raw.strip() and not moment(raw)
        ]
        if bad:
            messages.error(
                request,
                _(
                    "Not a date and time: %(values)s. Use YYYY-MM-DD HH:MM[:SS];"
                    " the time range is not applied."
                )
                % {"values": ", ".join(repr(self.raw[name]) for name in bad)},
            )
        else:
            self.bounds = {
                name: when
                for name, raw in self.raw.items()
                if raw and (when := moment(raw)) is not None
            }

    def has_output(self) -> bool:
        return True

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, Any]]:
        return [(key, label) for key, (label, _delta) in PERIODS.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        period = PERIODS.get(self.value() or "")
        if period is not None:
            queryset = queryset.filter(created_at__gte=timezone.now() - period[1])
        return queryset.filter(**self.bounds) if self.bounds else queryset

    def choices(self, changelist: Any) -> Iterator[Any]:
        custom = bool(self.bounds)
        yield {
            "selected": self.value() is None and not custom,
            "query_string": changelist.get_query_string(
                remove=[self.parameter_name, *self.BOUNDS]
            ),
            "display": _("All"),
        }
        for key, label in self.lookup_choices:
            yield {
                "selected": self.value() == key and not custom,
                "query_string": changelist.get_query_string(
                    {self.parameter_name: key}, self.BOUNDS
                ),
                "display": label,
            }

    def custom(self) -> dict[str, Any]:
        """What the custom-range form needs: whether it is the one in force, the
        other query parameters (kept as hidden inputs) and the bounds' values."""
        return {
            "selected": bool(self.bounds),
            "hidden": [
                (name, value)
                for name, values in self.request.GET.lists()
                if name not in self.HIDDEN
                for value in values
            ],
            "gte": self.shown("created_at__gte"),
            "lt": self.shown("created_at__lt"),
        }

    def shown(self, name: str) -> str:
        when = self.bounds.get(name)
        if when is None:
            return self.raw.get(name, "") if not self.bounds else ""
        return timezone.localtime(when).strftime("%Y-%m-%dT%H:%M:%S")


def moment(raw: str) -> datetime | None:
    """``raw`` as an aware datetime (naive ones in the site's time zone), or None
    when it is no date. A bare date is its midnight."""
    raw = raw.strip()
    try:
        when = parse_datetime(raw)
        if when is None:
            day = parse_date(raw)
            when = datetime.combine(day, time()) if day else None
    except ValueError:  # well formed but impossible, e.g. 2026-02-30
        return None
    if when is not None and timezone.is_naive(when):
        when = timezone.make_aware(when)
    return when


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

    readonly_fields = ["time"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """A row's page shows its time with seconds, where ``created_at`` was."""
        fields = [f for f in super().get_fields(request, obj) if f != "time"]
        return ["time" if f == "created_at" else f for f in fields]

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
