"""The demo engines' store: notes, kept per tenant."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Note(models.Model):
    """A short text a tenant's caller saved through ``demo.add_note``.

    A note belongs to the tenant's row (its primary key, which engines read
    as ``context.principal.tenant_id``), never to its slug: a slug given up
    and later taken by another tenant must not carry notes with it. Deleting
    a tenant deletes its notes.
    """

    tenant = models.ForeignKey(
        "mcp_gateway.Tenant",
        on_delete=models.CASCADE,
        related_name="demo_notes",
        verbose_name=_("tenant"),
    )
    title = models.CharField(_("title"), max_length=200)
    body = models.TextField(_("body"), blank=True)
    created_by = models.CharField(_("created by"), max_length=150, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["tenant", "id"]
        verbose_name = _("note")
        verbose_name_plural = _("notes")

    def __str__(self) -> str:
        return f"{self.tenant_id}: {self.title}"
