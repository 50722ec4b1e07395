"""A tenant's authorization servers, edited inline on the tenant."""

from __future__ import annotations

from django import forms
from django.contrib import admin
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


class AuthorizationServerInline(admin.StackedInline[AuthorizationServer, Tenant]):
    model = AuthorizationServer
    form = AuthorizationServerForm
    extra = 0
