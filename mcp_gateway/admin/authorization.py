"""A tenant's authorization servers, edited inline on the tenant.

Fields are grouped by kind (JWT or introspection); ``admin.js`` shows only
the kind chosen. Lists (algorithms, scopes) are one entry per line.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.utils.translation import gettext_lazy as _

from mcp_gateway.models import AuthorizationServer, Tenant


class LinesField(forms.CharField):
    """A list of short strings, one per line (a JSON list is accepted too)."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 40, "spellcheck": "false"})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        if text.lstrip().startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError as exc:
                raise ValidationError(_("Give one entry per line.")) from exc
            if isinstance(parsed, list):
                return [str(item) for item in parsed]
        return [line.strip() for line in text.splitlines() if line.strip()]


HELP = {
    "issuer": _(
        "The server's issuer URL, exactly as its tokens and its "
        "/.well-known metadata spell it, e.g. https://login.example.com/."
    ),
    "kind": _(
        "JWT: the server signs access tokens the gateway checks itself with "
        "the server's public keys. Introspection: tokens are opaque and the "
        "gateway asks the server about each one (RFC 7662)."
    ),
    "jwks_uri": _(
        "Where the server publishes its public signing keys; leave empty to "
        "read it from the issuer's metadata."
    ),
    "algorithms": _(
        "Signature algorithms accepted, one per line (RS256, ES256, …); "
        "empty: RS256 and ES256."
    ),
    "introspection_endpoint": _(
        "The URL the gateway posts each opaque token to, to learn whether it "
        "is active and whose it is."
    ),
    "client_id": _("The gateway's client id at the server, for introspection."),
    "user_claim": _(
        "The claim in the token that names the user: sub, username, email, …"
    ),
    "user_field": _(
        "Which field of this site's users that claim's value is compared with."
    ),
    "scopes": _(
        "Scopes the gateway publishes for clients to ask for, one per line; "
        "empty: mcp:tools and mcp:tools:read."
    ),
}


class AuthorizationServerForm(forms.ModelForm[AuthorizationServer]):
    """The client secret is write-only: never shown, kept when left empty."""

    client_secret = forms.CharField(
        label=_("Client secret"),
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text=_(
            "The gateway's client secret at the server, for introspection. "
            "Write-only: never shown; leave empty to keep the stored one."
        ),
    )
    algorithms = LinesField(
        label=_("Allowed algorithms"), required=False, help_text=HELP["algorithms"]
    )
    scopes = LinesField(
        label=_("Scopes published"), required=False, help_text=HELP["scopes"]
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
        help_texts = HELP

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
    fieldsets = [
        (None, {"fields": ["issuer", "kind", "user_claim", "user_field", "scopes"]}),
        (
            _("JWT access tokens"),
            {
                "classes": ["mcp-kind", "mcp-kind-jwt"],
                "fields": ["jwks_uri", "algorithms"],
            },
        ),
        (
            _("Opaque tokens (introspection)"),
            {
                "classes": ["mcp-kind", "mcp-kind-introspection"],
                "fields": ["introspection_endpoint", "client_id", "client_secret"],
            },
        ),
    ]
