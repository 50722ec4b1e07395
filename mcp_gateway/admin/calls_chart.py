"""A tenant's tool calls per tool over the last 24 hours, as HTML bars.

Each bar is a ``<meter>``: its length comes from its value, not from an
inline style, so it draws at every width and under a strict
Content-Security-Policy. Each row links to the tool's calls in the audit
log. Calls of tools the tenant does not expose (unknown names) ran no
engine and are left out.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.db.models import Count
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from mcp_gateway.audit.models import ToolCall
from mcp_gateway.models import Tenant

WINDOW = timedelta(hours=24)
BAR = (
    '<tr><th scope="row"><a href="{}">{}</a></th>'
    '<td class="mcp-bar-cell"><meter class="mcp-bar" min="0" max="{}" value="{}" '
    'aria-label="{}">{}</meter></td>'
    "<td>{}</td></tr>"
)


def calls_per_tool(
    tenant: Tenant, now: datetime | None = None
) -> list[tuple[str, int]]:
    """Count the tenant's calls per tool name in the window: one query.

    Only calls that reached an engine of the tenant count (they carry its
    id); a call of an unknown tool name does not.
    """
    since = (now or timezone.now()) - WINDOW
    rows = (
        ToolCall.objects.filter(tenant=tenant, created_at__gte=since)
        .exclude(engine_id="")
        .values("tool_name")
        .annotate(calls=Count("pk"))
        .order_by("-calls", "tool_name")
    )
    return [(row["tool_name"], row["calls"]) for row in rows]


def chart_html(
    counts: list[tuple[str, int]],
    tenant: Tenant | None = None,
    now: datetime | None = None,
) -> SafeString:
    """One bar per tool, as long as its share of the busiest tool's calls."""
    if not counts:
        return format_html("<p>{}</p>", _("No tool calls in the last 24 hours."))
    top = max(calls for _name, calls in counts)
    since = ((now or timezone.now()) - WINDOW).replace(microsecond=0).isoformat()
    base = reverse("admin:mcp_gateway_toolcall_changelist")

    def link(name: str) -> str:
        query = {"tool_name": name, "created_at__gte": since}
        if tenant is not None:
            query["tenant__id__exact"] = str(tenant.pk)
        return f"{base}?{urlencode(query)}"

    bars = format_html_join(
        "",
        BAR,
        (
            (link(name), name or "-", top, calls, name or "-", calls, calls)
            for name, calls in counts
        ),
    )
    return format_html(
        '<table class="mcp-calls-chart" aria-label="{}">{}</table>',
        _("Calls per tool, last 24 hours"),
        bars,
    )
