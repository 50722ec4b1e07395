"""A tenant's authorization servers, edited inline on the tenant."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.utils.translation import gettext_lazy as _

from mcp_gateway.models import AuthorizationServer, Tenant


class AuthorizationServerForm(forms.ModelForm[AuthorizationServer]):
    """The client secret is write-only: never shown, kept when left empty."""

    client_secret = forms.CharField(
        label=_("client secret"),
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text=_("Write-only. Leave empty to keep the stored secret."),
    )

    class Meta:
        model = AuthorizationServer
        fields = [
            "issuer",
            "kind",
            "jwks_uri",
            "algorithms",
            "introspection_endpoint",
            "client_id",
            "client_secret",
            "user_claim",
            "user_field",
            "scopes",
        ]

    def clean_client_secret(self) -> str:
        secret: str = self.cleaned_data.get("client_secret") or ""
        return secret or self.instance.client_secret


class AuthorizationServerFormSet(BaseInlineFormSet[AuthorizationServer, Tenant, Any]):
    """At most one introspection server among the rows kept."""

    def clean(self) -> None:
        super().clean()
        kept = [
            form
            for form in self.forms
            if form.has_changed() or form.instance.pk is not None
        ]
        kinds = [
            form.cleaned_data.get("kind")
            for form in kept
            if getattr(form, "cleaned_data", None)
            and not form.cleaned_data.get("DELETE")
        ]
        if kinds.count(AuthorizationServer.Kind.INTROSPECTION) > 1:
            raise ValidationError(_("A tenant has at most one introspection server."))


class AuthorizationServerInline(admin.StackedInline[AuthorizationServer, Tenant]):
    model = AuthorizationServer
    form = AuthorizationServerForm
    formset = AuthorizationServerFormSet
    extra = 0
