"""The stored secrets: ciphertext only, with who set it and when."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class EngineSecret(models.Model):
    """One named secret of one engine of one tenant, encrypted at rest.

    ``ciphertext`` is a Fernet token under one of ``SECRET_KEYS``;
    ``key_id`` names that key by a fingerprint (never the key), so a process
    can tell at start-up whether its keys open every stored secret.
    """

    tenant = models.ForeignKey(
        "mcp_gateway.Tenant",
        on_delete=models.CASCADE,
        related_name="secrets",
        verbose_name=_("tenant"),
    )
    engine_id = models.CharField(_("engine"), max_length=200)
    name = models.CharField(_("name"), max_length=64)
    ciphertext = models.TextField(_("ciphertext"), editable=False)
    key_id = models.CharField(_("key id"), max_length=16, editable=False)
    set_at = models.DateTimeField(_("set on"), default=timezone.now, editable=False)
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
        verbose_name=_("set by"),
    )
    set_by_name = models.CharField(
        _("set by (name)"), max_length=150, blank=True, editable=False
    )

    class Meta:
        ordering = ["tenant", "engine_id", "name"]
        verbose_name = _("engine secret")
        verbose_name_plural = _("engine secrets")
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "engine_id", "name"],
                name="mcp_gateway_secret_unique_name",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.engine_id}:{self.name}"

    def __repr__(self) -> str:
        return f"<EngineSecret {self}>"  # never the ciphertext
