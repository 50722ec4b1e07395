"""Approving changed tools in the admin: a confirmation page listing each
change (approved vs installed definition), then the bookkeeping service."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from mcp_gateway import bookkeeping
from mcp_gateway.admin.status import LABELS, diff_html
from mcp_gateway.errors import BookkeepingError
from mcp_gateway.models import Exposure, Tenant

TEMPLATE = "admin/mcp_gateway/approve.html"


def changed(exposures: Iterable[Exposure]) -> list[bookkeeping.ExposureState]:
    return [s for s in bookkeeping.states(exposures) if s.changed]


def confirmation(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    found: list[bookkeeping.ExposureState],
    *,
    action: str = "",
    selected: Iterable[Any] = (),
    cancel_url: str,
) -> TemplateResponse:
    """The page that lists every change and asks to approve them."""
    items = [
        {
            "exposure": state.exposure,
            "installed_version": getattr(state.engine, "version", "-"),
            "status_label": LABELS[state.status],
            "diff": diff_html(state),
        }
        for state in found
    ]
    context = {
        **model_admin.admin_site.each_context(request),
        "title": _("Approve changed tools"),
        "opts": model_admin.opts,
        "items": items,
        "action": action,
        "selected": [str(pk) for pk in selected],
        "cancel_url": cancel_url,
    }
    return TemplateResponse(request, TEMPLATE, context)


def approve(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    found: list[bookkeeping.ExposureState],
) -> int:
    """Approve through the bookkeeping service, one call per tenant; report
    each as a message. Returns how many were approved."""
    by_tenant: dict[Tenant, list[str]] = defaultdict(list)
    for state in found:
        by_tenant[state.exposure.tenant].append(state.exposure.engine_id)
    total = 0
    for tenant, engine_ids in by_tenant.items():
        try:
            done = bookkeeping.approve(tenant, engine_ids, by=request.user, via="admin")
        except BookkeepingError as exc:
            model_admin.message_user(
                request, f"{tenant}: {exc.message}", messages.ERROR
            )
            continue
        total += len(done)
        names = ", ".join(e.tool_name for e in done)
        model_admin.message_user(
            request,
            _("%(tenant)s: approved %(n)s changed tool(s): %(names)s.")
            % {"tenant": tenant, "n": len(done), "names": names},
            messages.SUCCESS,
        )
    if not by_tenant:
        model_admin.message_user(
            request, _("Nothing to approve: no selected tool changed."), messages.INFO
        )
    return total


def is_confirmed(request: HttpRequest) -> bool:
    return request.method == "POST" and request.POST.get("post") == "yes"


def run_action(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    exposures: Iterable[Exposure],
    *,
    action: str,
    selected: Iterable[Any],
    cancel_url: str,
) -> HttpResponse | None:
    """A bulk action: the confirmation page first, approval on its POST."""
    found = changed(exposures)
    if is_confirmed(request):
        approve(model_admin, request, found)
        return None  # back to the list
    return confirmation(
        model_admin,
        request,
        found,
        action=action,
        selected=selected,
        cancel_url=cancel_url,
    )
