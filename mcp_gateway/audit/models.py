"""Audit models: one row per tool call that reached dispatch, one per change.

Rows keep plain text copies (tenant slug, user name, token prefix) besides
the foreign keys, so deleting a tenant or a user never rewrites history.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Outcome(models.TextChoices):
    OK = "ok", _("ok")
    TOOL_ERROR = "tool_error", _("tool error")
    INVALID = "invalid", _("invalid request (unknown tool, bad params)")
    FAILED = "failed", _("failed")
    DENIED = "denied", _("denied")
    TIMEOUT = "timeout", _("timeout")
    RATE_LIMITED = "rate_limited", _("rate limited")
    CANCELLED = "cancelled", _("cancelled")
    BUSY = "busy", _("busy (the tenant's concurrent calls at their cap)")
    QUOTA = "quota", _("over quota (the day's or month's calls used up)")
    AWAITING = "awaiting", _("awaiting confirmation (asked, or parked for staff)")
    CONFIRMED = "confirmed", _("confirmed (by the caller or staff; it then ran)")
    DECLINED = "declined", _("declined (by the caller, or denied by staff)")
    EXPIRED = "expired", _("confirmation expired")
    UNCONFIRMED = "unconfirmed", _("refused: needs a confirmation none can give")


class ToolCall(models.Model):
    """A ``tools/call`` that reached dispatch, whatever became of it."""

    tenant = models.ForeignKey(
        "mcp_gateway.Tenant",
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("tenant"),
    )
    tenant_slug = models.CharField(_("tenant slug"), max_length=64)
    user = models.CharField(_("user"), max_length=150, blank=True)
    token_prefix = models.CharField(_("token prefix"), max_length=16, blank=True)
    tool_name = models.CharField(_("tool name"), max_length=200, blank=True)
    engine_id = models.CharField(_("engine"), max_length=200, blank=True)
    engine_version = models.CharField(_("engine version"), max_length=64, blank=True)
    outcome = models.CharField(_("outcome"), max_length=16, choices=Outcome)
    duration_ms = models.PositiveIntegerField(_("duration (ms)"), default=0)
    request_id = models.CharField(_("JSON-RPC id"), max_length=200, blank=True)
    protocol_version = models.CharField(
        _("protocol version"), max_length=16, blank=True
    )
    arguments = models.JSONField(_("arguments"), null=True, blank=True)
    error_code = models.CharField(
        _("error code"),
        max_length=64,
        blank=True,
        help_text=_(
            "For a failed call: the tool error's code (EXECUTION_FAILED, "
            "TIMEOUT, …) or the JSON-RPC error code (-32602, …)."
        ),
    )
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)
    chain_seq = models.PositiveBigIntegerField(
        _("chain position"), null=True, blank=True, editable=False
    )
    chain_hash = models.CharField(
        _("chain hash"), max_length=64, blank=True, editable=False
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("tool call")
        verbose_name_plural = _("tool calls")
        indexes = [
            models.Index(
                fields=["tenant", "created_at"], name="mcp_gateway_call_tenant_time"
            ),
            # Usage export: calls per tenant, tool, day and outcome, read
            # from the index alone.
            models.Index(
                fields=["tenant_slug", "created_at", "tool_name", "outcome"],
                name="mcp_gateway_call_usage",
            ),
            # Rows the sealing step has yet to chain: small, since sealing
            # takes rows out of it.
            models.Index(
                fields=["tenant_slug", "id"],
                condition=Q(chain_seq__isnull=True),
                name="mcp_gateway_call_unsealed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_slug}:{self.tool_name} {self.outcome}"


class ExposureEvent(models.Model):
    """Who changed which exposures of a tenant, when, and through what."""

    class Action(models.TextChoices):
        EXPOSE = "expose", _("expose")
        EXPOSE_ALL = "expose_all", _("expose all")
        UNEXPOSE = "unexpose", _("unexpose")
        CLEAR = "clear", _("clear")
        APPROVE = "approve", _("approve")
        DRIFT = "drift", _("definition changed")
        CONFIRMATION = "confirmation", _("requires confirmation changed")
        APPROVE_CALL = "approve_call", _("approve a parked call")
        DENY_CALL = "deny_call", _("deny a parked call")

    class Via(models.TextChoices):
        ADMIN = "admin", _("admin")
        API = "api", _("REST API")
        COMMAND = "command", _("management command")
        CODE = "code", _("code")

    tenant = models.ForeignKey(
        "mcp_gateway.Tenant",
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("tenant"),
    )
    tenant_slug = models.CharField(_("tenant slug"), max_length=64)
    action = models.CharField(_("action"), max_length=16, choices=Action)
    engine_ids = models.JSONField(_("engines"), default=list)
    catalog_version = models.PositiveBigIntegerField(_("catalog version"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("by"),
    )
    actor_name = models.CharField(_("by (name)"), max_length=150, blank=True)
    via = models.CharField(_("via"), max_length=16, choices=Via, default=Via.CODE)
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)
    chain_seq = models.PositiveBigIntegerField(
        _("chain position"), null=True, blank=True, editable=False
    )
    chain_hash = models.CharField(
        _("chain hash"), max_length=64, blank=True, editable=False
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("exposure change")
        verbose_name_plural = _("exposure changes")
        indexes = [
            models.Index(
                fields=["tenant_slug", "id"],
                condition=Q(chain_seq__isnull=True),
                name="mcp_gateway_change_unsealed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_slug}: {self.action} {', '.join(self.engine_ids)}"


class ChainHead(models.Model):
    """Where one tenant's chain of one kind of audit row stands.

    ``last_*`` is the newest sealed row; ``anchor_*`` the last row pruned on
    purpose (the chain's new start; empty before any prune). ``signature``
    is an HMAC of the head under ``AUDIT_ANCHOR_KEY`` (empty without one).
    """

    class Kind(models.TextChoices):
        CALL = "call", _("tool calls")
        CHANGE = "change", _("exposure changes")

    tenant_slug = models.CharField(_("tenant slug"), max_length=64)
    kind = models.CharField(_("kind"), max_length=8, choices=Kind)
    last_seq = models.PositiveBigIntegerField(_("last position"), default=0)
    last_id = models.PositiveBigIntegerField(_("last row"), default=0)
    last_hash = models.CharField(_("last hash"), max_length=64, blank=True)
    anchor_seq = models.PositiveBigIntegerField(_("anchor position"), default=0)
    anchor_hash = models.CharField(_("anchor hash"), max_length=64, blank=True)
    signature = models.CharField(_("signature"), max_length=64, blank=True)
    updated_at = models.DateTimeField(_("updated"), default=timezone.now)

    class Meta:
        ordering = ["tenant_slug", "kind"]
        verbose_name = _("audit chain head")
        verbose_name_plural = _("audit chain heads")
        constraints = [
            models.UniqueConstraint(
                fields=["tenant_slug", "kind"], name="mcp_gateway_chain_head_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant_slug}:{self.kind} @{self.last_seq}"
