"""Tenants, with their members and exposures inline."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, permissions
from mcp_gateway.admin import approvals
from mcp_gateway.admin.authorization import AuthorizationServerInline
from mcp_gateway.admin.calls_chart import calls_per_tool, chart_html
from mcp_gateway.admin.permissions import ActionPermissions
from mcp_gateway.admin.secrets import warn_missing
from mcp_gateway.admin.status import changed_q, status_html
from mcp_gateway.admin.users import UserFieldMixin
from mcp_gateway.audit.models import ExposureEvent, Outcome, ToolCall
from mcp_gateway.errors import BookkeepingError
from mcp_gateway.forms import TenantForm
from mcp_gateway.limits import quotas
from mcp_gateway.models import AuthorizationServer, Exposure, Membership, Tenant
from mcp_gateway.oauth import config as oauth_config
from mcp_gateway.oauth.resource import resource_url

logger = logging.getLogger("mcp_gateway")

HINT_LABELS = {
    "read_only": _("read-only"),
    "destructive": _("destructive"),
    "idempotent": _("idempotent"),
    "open_world": _("open world"),
}


def _urls(servers: list[AuthorizationServer]) -> list[str]:
    fields = ("issuer", "jwks_uri", "introspection_endpoint")
    return [url for server in servers for f in fields if (url := getattr(server, f))]


RAN_ENGINE = [
    Outcome.OK,
    Outcome.TOOL_ERROR,
    Outcome.FAILED,
    Outcome.TIMEOUT,
    Outcome.CANCELLED,
]
"""Outcomes of calls that ran an engine: the ones a quota counts."""


def usage_html(tenant: Tenant) -> str:
    """This month's and today's calls against the tenant's quotas: the
    counts the quotas keep, and this month's calls in the audit log."""
    now = datetime.now(UTC)
    counted = {u.period: u for u in quotas.usage(tenant, now)}
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    audited = ToolCall.objects.filter(
        tenant_slug=tenant.slug,
        created_at__gte=month_start,
        outcome__in=RAN_ENGINE,
    ).count()
    return format_html(
        "<p>{}</p><p>{}</p><p>{}</p>",
        _usage_line(_("This month (UTC)"), counted[quotas.MONTH]),
        _usage_line(_("Today (UTC)"), counted[quotas.DAY]),
        _("Audit log, this month: %(n)s calls that ran an engine.") % {"n": audited},
    )


def _usage_line(label: Any, usage: quotas.Usage) -> str:
    if usage.limit is None:
        return _("%(label)s: %(used)s calls; no quota.") % {
            "label": label,
            "used": usage.used,
        }
    return _("%(label)s: %(used)s of %(limit)s calls (%(percent)s%%).") % {
        "label": label,
        "used": usage.used,
        "limit": usage.limit,
        "percent": min(999, round(100 * usage.used / usage.limit)),
    }


def hint_labels(engine: Any) -> str:
    """The hints an engine states as true, e.g. "read-only, idempotent"."""
    hints = getattr(engine, "hints", None)
    said = [
        str(label) for key, label in HINT_LABELS.items() if getattr(hints, key, None)
    ]
    return ", ".join(said) or "-"


class MembershipInline(UserFieldMixin, admin.TabularInline[Membership, Tenant]):
    model = Membership
    extra = 0
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]


class ExposureInline(admin.TabularInline[Exposure, Tenant]):
    """Read-only: exposures change only through the bookkeeping service."""

    model = Exposure
    extra = 0
    can_delete = False
    show_change_link = True
    fields = readonly_fields = (  # shown, never edited here
        "tool_name",
        "engine_id",
        "engine_version",
        "hints",
        "status",
        "created_at",
    )

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("Status"))
    def status(self, obj: Exposure) -> SafeString:
        return status_html(obj)

    @admin.display(description=_("Hints"))
    def hints(self, obj: Exposure) -> str:
        return hint_labels(default_registry.get(obj.engine_id))


@admin.register(Tenant)
class TenantAdmin(ActionPermissions, admin.ModelAdmin[Tenant]):
    form = TenantForm
    list_display = [
        "slug",
        "name",
        "is_active",
        "exposure_count",
        "needs_attention",
        "catalog_version",
        "created_at",
    ]
    list_filter = ["is_active"]
    search_fields = ["slug", "name"]
    readonly_fields = [
        "mcp_url",
        "tool_status",
        "catalog_version",
        "expose_link",
        "related_links",
        "calls_chart",
        "quota_usage",
    ]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "mcp_url",
                    "tool_status",
                    "calls_chart",
                    "expose_link",
                    "related_links",
                ]
            },
        ),
        (_("Tenant"), {"fields": ["slug", "name", "is_active", "allowed_origins"]}),
        (
            _("Rate limits"),
            {
                "fields": [
                    "calls_per_minute",
                    "burst",
                    "token_calls_per_minute",
                    "token_burst",
                ]
            },
        ),
        (
            _("Quotas"),
            {
                "fields": [
                    "quota_usage",
                    "calls_per_day",
                    "calls_per_month",
                    "token_calls_per_day",
                    "token_calls_per_month",
                ]
            },
        ),
        (
            _("Audit and engines"),
            {
                "classes": ["collapse"],
                "fields": [
                    "audit_arguments",
                    "audit_redacted_keys",
                    "engine_config",
                    "catalog_version",
                ],
            },
        ),
    ]
    add_fieldsets = [
        (None, {"fields": ["slug", "name", "is_active", "allowed_origins"]}),
    ]
    inlines = [MembershipInline, ExposureInline, AuthorizationServerInline]
    actions = ["expose_all", "unexpose_all", "approve_changes"]

    class Media:
        css = {"all": ["mcp_gateway/admin.css"]}
        js = ["mcp_gateway/admin.js"]

    def get_urls(self) -> list[Any]:
        unexpose_all: list[URLPattern] = [
            path(
                "<int:object_id>/unexpose-all/",
                self.admin_site.admin_view(self.unexpose_all_view),
                name="mcp_gateway_tenant_unexpose_all",
            )
        ]
        return unexpose_all + super().get_urls()

    def unexpose_all_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """The tenant page's "Unexpose all": asks first, then back to the page."""
        tenant = get_object_or_404(Tenant, pk=object_id)
        needs = permissions.admin_action("tenant", "unexpose_all").needs
        if not permissions.allows(request.user, needs):
            raise PermissionDenied
        page = reverse("admin:mcp_gateway_tenant_change", args=[tenant.pk])
        if approvals.is_confirmed(request):
            removed = bookkeeping.clear(tenant, by=request.user, via="admin")
            self.message_user(
                request,
                _("%(tenant)s: unexposed %(n)s engine(s).")
                % {"tenant": tenant, "n": removed},
                messages.SUCCESS,
            )
            return HttpResponseRedirect(page)
        if request.method not in ("GET", "HEAD"):
            raise Http404
        return self._unexpose_all_confirmation(request, [tenant], cancel_url=page)

    def _unexpose_all_confirmation(
        self, request: HttpRequest, tenants: list[Tenant], *, cancel_url: str
    ) -> TemplateResponse:
        context = {
            **self.admin_site.each_context(request),
            "title": _("Unexpose every tool?"),
            "opts": self.opts,
            "tenants": tenants,
            "selected": [str(t.pk) for t in tenants],
            "action": "unexpose_all",
            "cancel_url": cancel_url,
        }
        return TemplateResponse(
            request, "admin/mcp_gateway/tenant/unexpose_all.html", context
        )

    def history_view(
        self,
        request: HttpRequest,
        object_id: str,
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """Django's history of the tenant's settings, and first its
        exposure events (expose, unexpose, approve, clear, drift)."""
        context = dict(extra_context or {})
        if object_id.isdigit() and permissions.allows(
            request.user, permissions.read("exposureevent")
        ):
            events = ExposureEvent.objects.filter(tenant_id=int(object_id))
            context["exposure_events"] = list(
                events.order_by("-created_at", "-pk")[:50]
            )
            context["more_events_url"] = (
                f"{reverse('admin:mcp_gateway_exposureevent_changelist')}"
                f"?tenant__id__exact={object_id}"
            )
        return super().history_view(request, object_id, context)

    def get_fieldsets(self, request: HttpRequest, obj: Tenant | None = None) -> Any:
        return self.fieldsets if obj is not None else self.add_fieldsets

    def get_inlines(self, request: HttpRequest, obj: Tenant | None = None) -> Any:
        return self.inlines if obj is not None else []

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tenant]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _exposures=Count("exposures"),
                _drifted=Count("exposures", filter=changed_q("exposures__")),
                _stale=Count(
                    "exposures",
                    filter=~Q(exposures__engine_id__in=default_registry.ids()),
                ),
            )
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        tenant = self.get_object(request, object_id)
        if request.method == "GET" and tenant is not None:
            warn_missing(request, tenant)  # exposed engines lacking a secret
        return super().change_view(request, object_id, form_url, extra_context)

    def get_readonly_fields(
        self, request: HttpRequest, obj: Tenant | None = None
    ) -> Any:
        fixed = ["slug"] if obj is not None else []  # its URL and data hang on it
        return [*fixed, *super().get_readonly_fields(request, obj)]

    def save_formset(
        self, request: HttpRequest, form: Any, formset: Any, change: bool
    ) -> None:
        super().save_formset(request, form, formset, change)
        if formset.model is not AuthorizationServer:
            return
        changed = [
            *formset.new_objects,
            *(obj for obj, _fields in formset.changed_objects),
        ]
        if changed or formset.deleted_objects:
            bookkeeping.access_changed(form.instance)
        for host in oauth_config.unresolved_hosts(_urls(changed)):
            message = _(
                "%(host)s does not resolve now; the gateway checks it again "
                "at every fetch and refuses it if it resolves to a private "
                "address."
            ) % {"host": host}
            logger.warning("Authorization server host %s does not resolve.", host)
            self.message_user(request, message, messages.WARNING)

    @admin.display(description=_("Exposures"), ordering="_exposures")
    def exposure_count(self, obj: Tenant) -> int:
        return int(getattr(obj, "_exposures", 0))

    @admin.display(description=_("Held or stale"))
    def needs_attention(self, obj: Tenant) -> str:
        drift = _("held") if bookkeeping.holds_drift() else _("changed")
        found = [
            (int(getattr(obj, "_drifted", 0)), drift),
            (int(getattr(obj, "_stale", 0)), _("stale")),
        ]
        return ", ".join(f"{n} {label}" for n, label in found if n) or "-"

    @admin.display(description=_("MCP URL"))
    def mcp_url(self, obj: Tenant) -> str:
        if obj.pk is None:
            return "-"
        return format_html(
            '<span class="mcp-url"><input type="text" readonly class="vTextField" '
            'id="mcp-url" value="{}" aria-label="{}">'
            '<button type="button" class="button" data-mcp-copy="mcp-url" '
            'data-mcp-copied="{}">{}</button>'
            '<span id="mcp-url-copied" class="mcp-copied" role="status" '
            'aria-live="polite"></span></span>',
            resource_url(obj.slug),
            _("MCP URL"),
            _("Copied"),
            _("Copy"),
        )

    @admin.display(description=_("Tools"))
    def tool_status(self, obj: Tenant) -> str:
        if obj.pk is None:
            return "-"
        found = bookkeeping.states(obj.exposures.all())
        counts = {s: sum(st.status == s for st in found) for s in bookkeeping.STATUSES}
        served = counts[bookkeeping.LIVE] + counts[bookkeeping.CHANGED]
        items = [
            (_("served"), served),
            (_("held"), counts[bookkeeping.HELD]),
            (_("stale"), counts[bookkeeping.STALE]),
        ]
        if counts[bookkeeping.CHANGED]:
            items.append((_("served though changed"), counts[bookkeeping.CHANGED]))
        status = (
            ""
            if obj.is_active
            else format_html(
                "<li><strong>{}</strong></li>", _("Disabled: every request is refused.")
            )
        )
        return format_html(
            '<ul class="mcp-summary" aria-label="{}">{}{}</ul>',
            _("Tools"),
            status,
            format_html_join("", "<li>{}: <strong>{}</strong></li>", items),
        )

    @admin.display(description=_("Expose"))
    def expose_link(self, obj: Tenant) -> str:
        if obj.pk is None:
            return "-"
        url = f"{reverse('admin:mcp_gateway_exposure_add')}?tenant={obj.pk}"
        unexpose = reverse("admin:mcp_gateway_tenant_unexpose_all", args=[obj.pk])
        return format_html(
            '<a href="{}">{}</a> · <a href="{}" class="mcp-unexpose-all">{}</a>',
            url,
            _("Expose an engine"),
            unexpose,
            _("Unexpose all"),
        )

    @admin.display(description=_("See also"))
    def related_links(self, obj: Tenant) -> str:
        if obj.pk is None:
            return "-"
        links = [
            (
                f"{reverse('admin:mcp_gateway_apitoken_changelist')}"
                f"?tenant__id__exact={obj.pk}",
                _("Tokens"),
            ),
            (
                f"{reverse('admin:mcp_gateway_toolcall_changelist')}"
                f"?tenant__id__exact={obj.pk}",
                _("Tool calls"),
            ),
            (
                f"{reverse('admin:mcp_gateway_exposureevent_changelist')}"
                f"?tenant__id__exact={obj.pk}",
                _("Exposure history"),
            ),
        ]
        return format_html_join(" · ", '<a href="{}">{}</a>', links)

    @admin.display(description=_("Calls per tool, last 24 hours"))
    def calls_chart(self, obj: Tenant) -> str:
        if obj.pk is None:
            return "-"
        return chart_html(calls_per_tool(obj), tenant=obj)

    @admin.display(description=_("Usage against quota"))
    def quota_usage(self, obj: Tenant) -> str:
        if obj.pk is None:
            return "-"
        return usage_html(obj)

    @admin.action(
        description=_("Expose all installed engines"), permissions=["add_exposure"]
    )
    def expose_all(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        def run(tenant: Tenant) -> str:
            result = bookkeeping.expose_all(tenant, by=request.user, via="admin")
            for skip in result.skipped:
                self.message_user(
                    request,
                    _("%(tenant)s: skipped %(engine)s: %(reason)s")
                    % {
                        "tenant": tenant,
                        "engine": skip.engine_id,
                        "reason": skip.reason,
                    },
                    messages.WARNING,
                )
            if not result.exposed:
                return _("%(tenant)s: exposed nothing new.") % {"tenant": tenant}
            names = ", ".join(e.tool_name for e in result.exposed)
            return _("%(tenant)s: exposed %(n)s engine(s): %(names)s.") % {
                "tenant": tenant,
                "n": len(result.exposed),
                "names": names,
            }

        self._each(request, queryset, run)

    @admin.action(description=_("Unexpose all"), permissions=["delete_exposure"])
    def unexpose_all(
        self, request: HttpRequest, queryset: QuerySet[Tenant]
    ) -> HttpResponse | None:
        """Asks first, as Django's delete does, listing what goes."""
        if not approvals.is_confirmed(request):
            return self._unexpose_all_confirmation(
                request,
                list(queryset.prefetch_related("exposures")),
                cancel_url=reverse("admin:mcp_gateway_tenant_changelist"),
            )

        def run(tenant: Tenant) -> str:
            removed = bookkeeping.clear(tenant, by=request.user, via="admin")
            return f"{tenant}: unexposed {removed} engine(s)."

        self._each(request, queryset, run)
        return None

    @admin.action(
        description=_("Approve changed tools"), permissions=["change_exposure"]
    )
    def approve_changes(
        self, request: HttpRequest, queryset: QuerySet[Tenant]
    ) -> HttpResponse | None:
        exposures = Exposure.objects.filter(tenant__in=queryset).select_related(
            "tenant"
        )
        return approvals.run_action(
            self,
            request,
            exposures,
            action="approve_changes",
            selected=queryset.values_list("pk", flat=True),
            cancel_url=reverse("admin:mcp_gateway_tenant_changelist"),
        )

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
