"""How the admin shows an exposure: live, held, changed or stale."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping
from mcp_gateway.bookkeeping import CHANGED, HELD, LIVE, STALE
from mcp_gateway.fingerprint import fingerprint
from mcp_gateway.models import Exposure

LABELS = {
    LIVE: _("Live"),
    HELD: _("Held (definition changed; not served until approved)"),
    CHANGED: _("Changed (definition changed; served, DRIFT_POLICY serve)"),
    STALE: _("Stale (engine not installed)"),
}
FIELD_LABELS = {
    "name": _("Tool name"),
    "title": _("Title"),
    "description": _("Description"),
    "input_schema": _("Input schema"),
    "output_schema": _("Output schema"),
    "hints": _("Hints"),
}


def status_of(exposure: Exposure) -> str:
    return bookkeeping.states([exposure])[0].status


def status_html(exposure: Exposure) -> SafeString:
    status = status_of(exposure)
    if status == LIVE:
        return format_html("{}", LABELS[LIVE])
    return format_html(
        '<strong class="mcp-status mcp-status-{}">⚠ {}</strong>', status, LABELS[status]
    )


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True)


def diff_html(state: bookkeeping.ExposureState) -> SafeString:
    """The approved and installed definition side by side, changed fields
    only; "approved definition unknown" when none was stored."""
    rows = state.diff()
    if not rows:
        return format_html("{}", _("No change: the installed definition is approved."))
    unknown = state.exposure.approved_definition is None
    note = (
        format_html(
            '<p class="mcp-diff-unknown"><strong>{}</strong></p>',
            _(
                "Approved definition unknown: it was approved before the "
                "gateway stored definitions. The installed definition:"
            ),
        )
        if unknown
        else ""
    )
    body = format_html_join(
        "",
        '<tr><th scope="row">{}</th><td><del><pre>{}</pre></del></td>'
        "<td><ins><pre>{}</pre></ins></td></tr>",
        (
            (FIELD_LABELS.get(key, key), "" if unknown else _shown(old), _shown(new))
            for key, old, new in rows
        ),
    )
    return format_html(
        '{}<table class="mcp-diff"><thead><tr><th>{}</th><th>{}</th><th>{}</th>'
        "</tr></thead><tbody>{}</tbody></table>",
        note,
        _("Field"),
        _("Approved"),
        _("Installed now"),
        body,
    )


def changed_q(prefix: str = "") -> Q:
    """Match exposures whose installed definition differs from the approved
    one (``prefix``: the path to the exposure, e.g. ``exposures__``)."""
    query = Q(**{f"{prefix}pk__in": []})
    for engine in default_registry:
        query |= Q(**{f"{prefix}engine_id": engine.id}) & ~Q(
            **{f"{prefix}fingerprint": fingerprint(engine)}
        )
    return query


class StatusFilter(admin.SimpleListFilter):
    title = _("status")
    parameter_name = "status"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, Any]]:
        drift = HELD if bookkeeping.holds_drift() else CHANGED
        return [(key, LABELS[key]) for key in (LIVE, drift, STALE)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        installed = default_registry.ids()
        value = self.value()
        if value == STALE:
            return queryset.exclude(engine_id__in=installed)
        if value in (HELD, CHANGED):
            return queryset.filter(changed_q())
        if value == LIVE:
            return queryset.filter(engine_id__in=installed).exclude(changed_q())
        return queryset
