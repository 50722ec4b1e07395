"""Calls parked for staff approval (``CALL_APPROVAL = "staff"``): staff see
the exact arguments and approve or deny; nothing else is edited here."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from mcp_gateway import call_approvals
from mcp_gateway.admin.permissions import ActionPermissions
from mcp_gateway.models import CallApproval


@admin.register(CallApproval)
class CallApprovalAdmin(ActionPermissions, admin.ModelAdmin[CallApproval]):
    list_display = [
        "tool_name",
        "tenant",
        "user",
        "token_prefix",
        "shown_state",
        "created_at",
        "expires_at",
        "decided_by",
    ]
    list_filter = ["state", "tenant"]
    search_fields = ["tool_name", "engine_id", "user", "tenant__slug"]
    list_select_related = ["tenant", "decided_by"]
    actions = ["approve_selected", "deny_selected"]
    fields = readonly_fields = (
        "tenant",
        "user",
        "token_prefix",
        "tool_name",
        "engine_id",
        "shown_arguments",
        "arguments_hash",
        "state",
        "created_at",
        "expires_at",
        "decided_by",
        "decided_at",
    )

    @admin.display(description=_("State"), ordering="state")
    def shown_state(self, obj: CallApproval) -> str:
        """``pending`` past its expiry reads as expired: staff can no longer
        decide it, and the caller's retry records the expiry."""
        live = obj.state in (CallApproval.State.PENDING, CallApproval.State.APPROVED)
        if live and obj.is_expired:
            return str(_("expired"))
        return str(obj.get_state_display())

    @admin.display(description=_("Arguments"))
    def shown_arguments(self, obj: CallApproval) -> SafeString:
        text = json.dumps(obj.arguments, indent=2, sort_keys=True, ensure_ascii=False)
        return format_html("<pre>{}</pre>", text)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # parked by the gateway, never by hand

    def has_delete_permission(
        self, request: HttpRequest, obj: CallApproval | None = None
    ) -> bool:
        return False  # the record of what staff decided stays

    @admin.action(
        description=_("Approve selected calls"), permissions=["change_callapproval"]
    )
    def approve_selected(
        self, request: HttpRequest, queryset: QuerySet[CallApproval]
    ) -> None:
        self._decide(request, queryset, approve=True)

    @admin.action(
        description=_("Deny selected calls"), permissions=["change_callapproval"]
    )
    def deny_selected(
        self, request: HttpRequest, queryset: QuerySet[CallApproval]
    ) -> None:
        self._decide(request, queryset, approve=False)

    def _decide(
        self, request: HttpRequest, queryset: QuerySet[CallApproval], *, approve: bool
    ) -> None:
        chosen = list(queryset)
        decided = call_approvals.decide(chosen, approve, by=request.user)
        if decided:
            text = (
                ngettext("%d call approved.", "%d calls approved.", decided)
                if approve
                else ngettext("%d call denied.", "%d calls denied.", decided)
            )
            self.message_user(request, text % decided, messages.SUCCESS)
        if decided < len(chosen):
            skipped = len(chosen) - decided
            self.message_user(
                request,
                ngettext(
                    "%d call was not pending (decided or expired) and was left.",
                    "%d calls were not pending (decided or expired) and were left.",
                    skipped,
                )
                % skipped,
                messages.WARNING,
            )
