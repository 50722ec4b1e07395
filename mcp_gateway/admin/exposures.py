"""Exposures: added with ``bookkeeping.expose``, deleted with ``unexpose``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from mcp_gateway import bookkeeping, permissions
from mcp_gateway.admin import approvals
from mcp_gateway.admin.permissions import ActionPermissions
from mcp_gateway.admin.status import StatusFilter, diff_html, status_html
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
        "installed_version",
        "status",
        "requires_confirmation",
        "exposed_by",
        "created_at",
    ]
    list_filter = [StatusFilter, "requires_confirmation", "tenant"]
    search_fields = ["tool_name", "engine_id", "tenant__slug", "tenant__name"]
    list_select_related = ["tenant", "exposed_by"]
    autocomplete_fields = ["tenant"]
    filter_horizontal = ["groups"]
    actions = ["approve_selected"]
    # Unexposing, not deleting: the engine stays installed.
    delete_confirmation_template = "admin/mcp_gateway/exposure/delete_confirmation.html"
    delete_selected_confirmation_template = (
        "admin/mcp_gateway/exposure/delete_selected_confirmation.html"
    )
    add_fields = ["tenant", "engine_id", "requires_confirmation"]
    view_fields = [
        "tenant",
        "engine_id",
        "tool_name",
        "status",
        "engine_version",
        "installed_version",
        "fingerprint",
        "changes",
        "exposed_by",
        "created_at",
    ]

    class Media:
        css = {"all": ["mcp_gateway/admin.css"]}

    @admin.display(description=_("Status"))
    def status(self, obj: Exposure) -> SafeString:
        return status_html(obj)

    @admin.display(description=_("Installed version"))
    def installed_version(self, obj: Exposure) -> str:
        engine = bookkeeping.states([obj])[0].engine
        return "-" if engine is None else str(engine.version)

    @admin.display(description=_("Changes since approval"))
    def changes(self, obj: Exposure) -> SafeString:
        state = bookkeeping.states([obj])[0]
        if not state.changed:
            return format_html("{}", _("None: the installed definition is approved."))
        url = reverse("admin:mcp_gateway_exposure_approve", args=[obj.pk])
        return format_html(
            '{}<p><a class="button" href="{}">{}</a></p>',
            diff_html(state),
            url,
            _("Approve changes"),
        )

    def get_urls(self) -> list[URLPattern]:
        approve = path(
            "<int:pk>/approve/",
            self.admin_site.admin_view(self.approve_view),
            name="mcp_gateway_exposure_approve",
        )
        return [approve, *super().get_urls()]

    def approve_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The exposure page's "Approve changes": the diff, then approval."""
        needs = permissions.admin_action("exposure", "approve_selected").needs
        if not permissions.allows(request.user, needs):
            raise PermissionDenied
        exposure = get_object_or_404(Exposure.objects.select_related("tenant"), pk=pk)
        page = reverse("admin:mcp_gateway_exposure_change", args=[pk])
        found = approvals.changed([exposure])
        if approvals.is_confirmed(request):
            approvals.approve(self, request, found)
            return HttpResponseRedirect(page)
        if request.method not in ("GET", "HEAD"):
            raise Http404
        return approvals.confirmation(self, request, found, cancel_url=page)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if (delete := actions.get("delete_selected")) is not None:
            label = str(_("Unexpose selected exposures"))
            actions["delete_selected"] = (delete[0], delete[1], label)
        return actions

    def get_fields(self, request: HttpRequest, obj: Exposure | None = None) -> Any:
        if obj is None:
            return self.add_fields
        return [*self.view_fields, "requires_confirmation", "groups"]

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
            return  # only its groups and confirmation change, in save_related
        exposure = bookkeeping.expose(
            obj.tenant,
            obj.engine_id,
            by=request.user,
            via="admin",
            requires_confirmation=obj.requires_confirmation,
        )
        obj.pk = exposure.pk
        obj.refresh_from_db()

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        if change:
            exposure = form.instance
            confirm = form.cleaned_data["requires_confirmation"]
            bookkeeping.require_confirmation(
                exposure, confirm, by=request.user, via="admin"
            )
            bookkeeping.restrict(exposure, form.cleaned_data["groups"])

    def response_delete(
        self, request: HttpRequest, obj_display: str, obj_id: Any
    ) -> HttpResponse:
        """Back to the tenant whose tool was unexposed."""
        response = super().response_delete(request, obj_display, obj_id)
        tenant = getattr(request, "_mcp_unexposed_from", None)
        if tenant is not None and isinstance(response, HttpResponseRedirect):
            return HttpResponseRedirect(
                reverse("admin:mcp_gateway_tenant_change", args=[tenant])
            )
        return response

    def delete_model(self, request: HttpRequest, obj: Exposure) -> None:
        request._mcp_unexposed_from = obj.tenant_id  # type: ignore[attr-defined]
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
        description=_("Approve changes of selected exposures"),
        permissions=["change_exposure"],
    )
    def approve_selected(
        self, request: HttpRequest, queryset: QuerySet[Exposure]
    ) -> HttpResponse | None:
        return approvals.run_action(
            self,
            request,
            queryset.select_related("tenant"),
            action="approve_selected",
            selected=queryset.values_list("pk", flat=True),
            cancel_url=reverse("admin:mcp_gateway_exposure_changelist"),
        )


def _add_url(tenant: str | None) -> str:
    url = reverse("admin:mcp_gateway_exposure_add")
    return f"{url}?tenant={tenant}" if tenant and tenant.isdigit() else url
