from __future__ import annotations

from django.conf import settings
from django.core.validators import validate_slug
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


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
        _("engine version"), max_length=64, editable=False
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
        return f"{self.tenant_id}:{self.tool_name}"


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

    class Meta:
        ordering = ["tenant", "-created_at"]
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_usable(self) -> bool:
        now = timezone.now()
        expired = self.expires_at is not None and self.expires_at <= now
        return self.revoked_at is None and not expired
