"""How the admin shows an exposure: live, stale or changed."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping
from mcp_gateway.fingerprint import fingerprint
from mcp_gateway.models import Exposure

LIVE, STALE, CHANGED = "live", "stale", "changed"
LABELS = {
    LIVE: _("live"),
    STALE: _("stale (engine not installed)"),
    CHANGED: _("changed (definition differs; re-confirm)"),
}


def status_of(exposure: Exposure) -> str:
    state = bookkeeping.states([exposure])[0]
    return STALE if state.stale else CHANGED if state.changed else LIVE


def status_html(exposure: Exposure) -> SafeString:
    status = status_of(exposure)
    if status == LIVE:
        return format_html("{}", LABELS[LIVE])
    return format_html(
        '<strong style="color: var(--error-fg)">⚠ {}</strong>', LABELS[status]
    )


def changed_q() -> Q:
    """Match exposures whose installed definition differs from the stored one."""
    query = Q(pk__in=[])
    for engine in default_registry:
        query |= Q(engine_id=engine.id) & ~Q(fingerprint=fingerprint(engine))
    return query


class StatusFilter(admin.SimpleListFilter):
    title = _("status")
    parameter_name = "status"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, Any]]:
        return list(LABELS.items())

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        installed = default_registry.ids()
        value = self.value()
        if value == STALE:
            return queryset.exclude(engine_id__in=installed)
        if value == CHANGED:
            return queryset.filter(changed_q())
        if value == LIVE:
            return queryset.filter(engine_id__in=installed).exclude(changed_q())
        return queryset
