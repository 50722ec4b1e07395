from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, validate_slug
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mcp_gateway.oauth import config as oauth_config


class Tenant(models.Model):
    slug = models.SlugField(
        _("slug"), max_length=64, unique=True, validators=[validate_slug]
    )
    name = models.CharField(_("name"), max_length=200)
    is_active = models.BooleanField(_("active"), default=True)
    allowed_origins = models.JSONField(
        _("allowed browser origins"),
        default=list,
        blank=True,
        help_text=_('Exact origins, e.g. ["https://app.example.com"].'),
    )
    engine_config = models.JSONField(_("engine config"), default=dict, blank=True)
    calls_per_minute = models.PositiveIntegerField(
        _("calls per minute"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("Tool calls per minute for the whole tenant; empty: unlimited."),
    )
    burst = models.PositiveIntegerField(
        _("burst"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("Calls allowed at once; empty: the per-minute number."),
    )
    token_calls_per_minute = models.PositiveIntegerField(
        _("calls per minute per token"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("Tool calls per minute for each token; empty: unlimited."),
    )
    token_burst = models.PositiveIntegerField(
        _("burst per token"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("Calls one token may make at once; empty: its per-minute number."),
    )
    calls_per_day = models.PositiveIntegerField(
        _("calls per day"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "Quota: tool calls that run an engine per UTC day, for the whole "
            "tenant; empty: no quota."
        ),
    )
    calls_per_month = models.PositiveIntegerField(
        _("calls per month"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "Quota: tool calls that run an engine per UTC calendar month, for "
            "the whole tenant; empty: no quota."
        ),
    )
    token_calls_per_day = models.PositiveIntegerField(
        _("calls per day per token"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "Quota of each token (or OAuth user) per UTC day; empty: no quota."
        ),
    )
    token_calls_per_month = models.PositiveIntegerField(
        _("calls per month per token"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "Quota of each token (or OAuth user) per UTC calendar month; "
            "empty: no quota."
        ),
    )
    audit_arguments = models.BooleanField(
        _("record tool arguments"),
        default=False,
        help_text=_("Store each call's arguments in the audit log (redacted)."),
    )
    audit_redacted_keys = models.JSONField(
        _("redacted argument keys"),
        default=list,
        blank=True,
        help_text=_('Keys whose values are never stored, e.g. ["password"].'),
    )
    catalog_version = models.PositiveBigIntegerField(
        _("catalog version"), default=1, editable=False
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        verbose_name = _("tenant")
        verbose_name_plural = _("tenants")

    def __str__(self) -> str:
        return self.slug


class Exposure(models.Model):
    """Engine X is a tool of tenant T."""

    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="exposures"
    )
    engine_id = models.CharField(_("engine"), max_length=200)
    tool_name = models.CharField(_("tool name"), max_length=64, editable=False)
    fingerprint = models.CharField(_("fingerprint"), max_length=64, editable=False)
    engine_version = models.CharField(
        _("approved version"), max_length=64, editable=False
    )
    approved_definition = models.JSONField(
        _("approved definition"),
        null=True,
        blank=True,
        editable=False,
        help_text=_(
            "The tool definition staff approved (name, title, description, "
            "schemas, hints); empty: unknown (approved before it was stored)."
        ),
    )
    exposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
        verbose_name=_("exposed by"),
    )
    created_at = models.DateTimeField(
        _("exposed at"), default=timezone.now, editable=False
    )
    requires_confirmation = models.BooleanField(
        _("requires confirmation"),
        default=False,
        db_default=False,  # rows written by code that predates the column
        help_text=_(
            "The gateway asks before each call runs (the caller confirms the "
            "exact arguments, or staff approve the call under CALL_APPROVAL "
            '"staff"); a client that cannot be asked is refused.'
        ),
    )
    groups = models.ManyToManyField(
        Group,
        blank=True,
        related_name="mcp_exposures",
        verbose_name=_("groups"),
        help_text=_(
            "Only members in one of these groups see and call the tool; "
            "none means every member of the tenant."
        ),
    )

    class Meta:
        ordering = ["tenant", "tool_name"]
        verbose_name = _("exposure")
        verbose_name_plural = _("exposures")
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "engine_id"],
                name="mcp_gateway_exposure_unique_engine",
            ),
            models.UniqueConstraint(
                fields=["tenant", "tool_name"], name="mcp_gateway_exposure_unique_tool"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.engine_id})"


class InstalledEngine(Exposure):
    """The admin's Engines page: installed engines, not rows of a table."""

    class Meta:
        proxy = True
        verbose_name = _("installed engine")
        verbose_name_plural = _("installed engines")
        default_permissions = ()


class CallApproval(models.Model):
    """A call to a tool that requires confirmation, parked for staff.

    Under ``CALL_APPROVAL = "staff"`` the first call is refused and parked
    here; staff approve or deny it; the caller's retry with the same
    arguments (the same hash) before ``expires_at`` runs it once.
    """

    class State(models.TextChoices):
        PENDING = "pending", _("pending")
        APPROVED = "approved", _("approved")
        DENIED = "denied", _("denied")
        EXPIRED = "expired", _("expired")
        USED = "used", _("used (the approved call ran)")

    tenant = models.ForeignKey(
        Tenant,
        on_delete=models.CASCADE,
        related_name="call_approvals",
        verbose_name=_("tenant"),
    )
    user = models.CharField(_("user"), max_length=150, blank=True, editable=False)
    token_prefix = models.CharField(
        _("token prefix"), max_length=16, blank=True, editable=False
    )
    tool_name = models.CharField(_("tool name"), max_length=64, editable=False)
    engine_id = models.CharField(_("engine"), max_length=200, editable=False)
    arguments = models.JSONField(_("arguments"), editable=False)
    arguments_hash = models.CharField(
        _("arguments hash"), max_length=64, editable=False
    )
    state = models.CharField(
        _("state"),
        max_length=16,
        choices=State,
        default=State.PENDING,
        editable=False,
    )
    created_at = models.DateTimeField(
        _("asked at"), default=timezone.now, editable=False
    )
    expires_at = models.DateTimeField(_("expires"), editable=False)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(
        _("decided at"), null=True, blank=True, editable=False
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("call approval")
        verbose_name_plural = _("call approvals")
        indexes = [
            models.Index(
                fields=[
                    "tenant",
                    "user",
                    "token_prefix",
                    "tool_name",
                    "arguments_hash",
                ],
                name="mcp_gateway_approval_call",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} by {self.user or '-'} ({self.state})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()


class Membership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", _("member")
        ADMIN = "admin", _("admin")

    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="memberships"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="mcp_memberships",
    )
    role = models.CharField(_("role"), max_length=16, choices=Role, default=Role.MEMBER)
    created_at = models.DateTimeField(_("joined"), auto_now_add=True)

    class Meta:
        ordering = ["tenant", "user"]
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "user"], name="mcp_gateway_membership_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"


class ApiToken(models.Model):
    """A tenant-bound bearer token; the secret is stored hashed."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_tokens"
    )
    prefix = models.CharField(_("prefix"), max_length=16, unique=True, editable=False)
    secret_hash = models.CharField(_("secret hash"), max_length=128, editable=False)
    name = models.CharField(_("name"), max_length=100, blank=True)
    scopes = models.JSONField(_("scopes"), default=list)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    revoked_at = models.DateTimeField(
        _("revoked"), null=True, blank=True, editable=False
    )
    last_used_at = models.DateTimeField(
        _("last used"), null=True, blank=True, editable=False
    )
    calls_per_day = models.PositiveIntegerField(
        _("calls per day"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "This token's own quota of tool calls per UTC day; empty: the "
            "tenant's quota per token, if any."
        ),
    )
    calls_per_month = models.PositiveIntegerField(
        _("calls per month"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "This token's own quota of tool calls per UTC calendar month; "
            "empty: the tenant's quota per token, if any."
        ),
    )

    class Meta:
        ordering = ["tenant", "-created_at"]
        # "MCP", so staff tell them from the REST API's keys (DRF's tokens).
        verbose_name = _("MCP token")
        verbose_name_plural = _("MCP tokens")

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_usable(self) -> bool:
        now = timezone.now()
        expired = self.expires_at is not None and self.expires_at <= now
        return self.revoked_at is None and not expired


class AuthorizationServer(models.Model):
    """An OAuth authorization server whose access tokens a tenant accepts."""

    class Kind(models.TextChoices):
        JWT = "jwt", _("JWT access tokens (JWKS)")
        INTROSPECTION = "introspection", _("opaque tokens (RFC 7662 introspection)")

    class UserField(models.TextChoices):
        USERNAME = "username", _("username")
        EMAIL = "email", _("email address")

    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="authorization_servers"
    )
    issuer = models.CharField(
        _("issuer"),
        max_length=500,
        help_text=_("Exactly as the server's metadata and tokens spell it."),
    )
    kind = models.CharField(_("kind"), max_length=16, choices=Kind, default=Kind.JWT)
    jwks_uri = models.CharField(
        _("JWKS URI"),
        max_length=500,
        blank=True,
        help_text=_("Empty: read from the issuer's metadata."),
    )
    algorithms = models.JSONField(
        _("allowed algorithms"),
        default=list,
        blank=True,
        help_text=_("Empty: RS256, ES256."),
    )
    introspection_endpoint = models.CharField(
        _("introspection endpoint"), max_length=500, blank=True
    )
    client_id = models.CharField(_("client id"), max_length=200, blank=True)
    client_secret = models.CharField(_("client secret"), max_length=500, blank=True)
    user_claim = models.CharField(
        _("user claim"),
        max_length=64,
        default="sub",
        help_text=_("The token claim naming the user: sub, username, email, …"),
    )
    user_field = models.CharField(
        _("matched against"),
        max_length=16,
        choices=UserField,
        default=UserField.USERNAME,
    )
    scopes = models.JSONField(
        _("scopes published"),
        default=list,
        blank=True,
        help_text=_("Empty: mcp:tools and mcp:tools:read."),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["tenant", "pk"]
        verbose_name = _("authorization server")
        verbose_name_plural = _("authorization servers")
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "issuer"],
                name="mcp_gateway_authorizationserver_unique_issuer",
            ),
            # An opaque token carries no issuer: with one introspection
            # server per tenant, no server sees another's tokens.
            models.UniqueConstraint(
                fields=["tenant"],
                condition=models.Q(kind="introspection"),
                name="mcp_gateway_authorizationserver_one_introspection",
                violation_error_message=_(
                    "A tenant has at most one introspection server."
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.issuer} ({self.kind})"

    def clean(self) -> None:
        errors: dict[str, list[ValidationError]] = {}
        for name in ("issuer", "jwks_uri", "introspection_endpoint"):
            value = getattr(self, name)
            if value:
                _collect(errors, name, oauth_config.validate_server_url, value)
        _collect(
            errors, "algorithms", oauth_config.validate_algorithms, self.algorithms
        )
        _collect(errors, "scopes", oauth_config.validate_scopes, self.scopes)
        if self.kind == self.Kind.INTROSPECTION:
            for name in ("introspection_endpoint", "client_id", "client_secret"):
                if not getattr(self, name):
                    errors.setdefault(name, []).append(
                        ValidationError(_("Required for introspection."))
                    )
        if errors:
            raise ValidationError(errors)


def _collect(
    errors: dict[str, list[ValidationError]],
    field: str,
    validate: Callable[[Any], None],
    value: Any,
) -> None:
    try:
        validate(value)
    except ValidationError as exc:
        errors.setdefault(field, []).append(exc)


# The audit models live in their own module; import them so the app finds
# them here, where Django looks.
from mcp_gateway.audit.models import (  # noqa: E402, F401
    ChainHead,
    ExposureEvent,
    ToolCall,
)
from mcp_gateway.engine_secrets.models import EngineSecret  # noqa: E402, F401
