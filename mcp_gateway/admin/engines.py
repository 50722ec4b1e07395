"""The Engines page: every installed engine, who exposes it, in what state."""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, permissions
from mcp_gateway.fingerprint import fingerprint
from mcp_gateway.models import Exposure, InstalledEngine
from mcp_gateway.naming import tool_name

TEMPLATE = "admin/mcp_gateway/installedengine/change_list.html"


@admin.register(InstalledEngine)
class InstalledEngineAdmin(admin.ModelAdmin[InstalledEngine]):
    """Not rows of a table: the registry, with each engine's exposures."""

    actions = None

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        needs = permissions.api_route("engines", "GET")
        return needs is not None and permissions.allows(request.user, needs.needs)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[Any]:
        from django.urls import path

        view = self.admin_site.admin_view(self.changelist_view)
        return [path("", view, name="mcp_gateway_installedengine_changelist")]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            from django.core.exceptions import PermissionDenied

            raise PermissionDenied
        exposures = Exposure.objects.select_related("tenant").order_by("tenant__slug")
        by_engine: dict[str, list[bookkeeping.ExposureState]] = defaultdict(list)
        for state in bookkeeping.states(exposures):
            by_engine[state.exposure.engine_id].append(state)
        add = reverse("admin:mcp_gateway_exposure_add")
        rows = []
        for engine in default_registry:
            found = by_engine.get(engine.id, [])
            counts = {
                status: sum(s.status == status for s in found)
                for status in (bookkeeping.HELD, bookkeeping.CHANGED)
            }
            rows.append(
                {
                    "id": engine.id,
                    "name": engine.name,
                    "tool_name": tool_name(engine.id),
                    "version": engine.version,
                    "fingerprint": fingerprint(engine),
                    "exposures": [
                        {
                            "tenant": s.exposure.tenant,
                            "status": s.status,
                            "url": reverse(
                                "admin:mcp_gateway_exposure_change",
                                args=[s.exposure.pk],
                            ),
                        }
                        for s in found
                    ],
                    "held": counts[bookkeeping.HELD],
                    "changed": counts[bookkeeping.CHANGED],
                    "expose_url": f"{add}?{urlencode({'engine_id': engine.id})}",
                }
            )
        stale = sorted(
            {
                (s.exposure.engine_id, s.exposure.tenant.slug)
                for states in by_engine.values()
                for s in states
                if s.stale
            }
        )
        context = {
            **self.admin_site.each_context(request),
            "title": _("Installed engines"),
            "opts": self.opts,
            "rows": rows,
            "stale": stale,
            "can_expose": permissions.allows(request.user, (("add_exposure",),)),
            **(extra_context or {}),
        }
        return TemplateResponse(request, TEMPLATE, context)
