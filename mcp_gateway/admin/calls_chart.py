"""A tenant's tool calls per tool over the last 24 hours, as HTML bars."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Count
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import Tenant

WINDOW = timedelta(hours=24)
BAR = (
    '<tr><th scope="row">{}</th>'
    '<td style="width:60%"><div style="width:{}%;height:1em;'
    'background:var(--secondary,#417690)"></div></td>'
    "<td>{}</td></tr>"
)


def calls_per_tool(
    tenant: Tenant, now: datetime | None = None
) -> list[tuple[str, int]]:
    """Count the tenant's calls per tool name in the window: one query."""
    since = (now or timezone.now()) - WINDOW
    rows = (
        ToolCall.objects.filter(tenant=tenant, created_at__gte=since)
        .values("tool_name")
        .annotate(calls=Count("pk"))
        .order_by("-calls", "tool_name")
    )
    return [(row["tool_name"], row["calls"]) for row in rows]


def chart_html(counts: list[tuple[str, int]]) -> SafeString:
    """One bar per tool, as wide as its share of the busiest tool's calls."""
    if not counts:
        return format_html("<p>{}</p>", _("No tool calls in the last 24 hours."))
    top = max(calls for _name, calls in counts)
    bars = format_html_join(
        "",
        BAR,
        ((name or "-", max(1, calls * 100 // top), calls) for name, calls in counts),
    )
    return format_html(
        '<table class="mcp-calls-chart" aria-label="{}">{}</table>',
        _("Calls per tool, last 24 hours"),
        bars,
    )
