"""The demo engines' store: notes, kept per tenant."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Note(models.Model):
    """A short text a tenant's caller saved through ``demo.add_note``.

    The tenant is its slug: the engine side never refers to the gateway's
    models.
    """

    tenant = models.SlugField(_("tenant"), max_length=64, db_index=True)
    title = models.CharField(_("title"), max_length=200)
    body = models.TextField(_("body"), blank=True)
    created_by = models.CharField(_("created by"), max_length=150, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["tenant", "id"]
        verbose_name = _("note")
        verbose_name_plural = _("notes")

    def __str__(self) -> str:
        return f"{self.tenant}: {self.title}"
