"""Forms of the admin; the commands share the origin rule."""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlsplit

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from engines_app.registry import EngineRegistry, default_registry
from mcp_gateway import generics  # noqa: F401 - ModelForm[...] below
from mcp_gateway import scopes as known_scopes
from mcp_gateway.models import ApiToken, Exposure, Tenant

_DEFAULT_PORTS = {"http": 80, "https": 443}


def clean_origin(value: str) -> str:
    """Return ``scheme://host[:port]`` normalized as browsers send it.

    Raises:
        ValidationError: not an http(s) origin, or one with a path.
    """
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ValidationError(
            _("%(value)r is not a valid origin."), params={"value": value}
        ) from exc
    extra = parts.path or parts.query or parts.fragment or parts.username
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or extra:
        raise ValidationError(
            _("%(value)r is not an origin: use http(s)://host[:port], no path."),
            params={"value": value},
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is None or port == _DEFAULT_PORTS[parts.scheme]:
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}://{host}:{port}"


def engine_choices(
    tenant: Tenant | None, registry: EngineRegistry | None = None
) -> list[tuple[str, str]]:
    """Installed engines not yet exposed to ``tenant``, as form choices."""
    registry = default_registry if registry is None else registry
    exposed = (
        set(tenant.exposures.values_list("engine_id", flat=True)) if tenant else set()
    )
    return [
        (engine.id, f"{engine.id} — {engine.name}")
        for engine in registry
        if engine.id not in exposed
    ]


class TenantForm(forms.ModelForm[Tenant]):
    class Meta:
        model = Tenant
        fields = [
            "slug",
            "name",
            "is_active",
            "allowed_origins",
            "engine_config",
            "calls_per_minute",
            "burst",
            "token_calls_per_minute",
            "token_burst",
            "calls_per_day",
            "calls_per_month",
            "token_calls_per_day",
            "token_calls_per_month",
            "audit_arguments",
            "audit_redacted_keys",
        ]

    def clean_audit_redacted_keys(self) -> list[str]:
        value = self.cleaned_data["audit_redacted_keys"]
        if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
            raise ValidationError(_("Give a list of argument names (strings)."))
        return value

    def clean_allowed_origins(self) -> list[str]:
        value = self.cleaned_data["allowed_origins"]
        if not isinstance(value, list) or not all(isinstance(o, str) for o in value):
            raise ValidationError(_("Give a list of origins (strings)."))
        return [clean_origin(origin) for origin in value]


class EngineChoiceField(forms.ChoiceField):
    """Offers the open engines; the bookkeeping service judges the value."""

    def valid_value(self, value: Any) -> bool:
        return isinstance(value, str) and bool(value)


class ExposureForm(forms.ModelForm[Exposure]):
    """Choose a tenant and one of the engines it does not expose yet.

    The engine list starts blank, so a browser never preselects an engine
    staff did not pick; choosing another tenant reloads the page with that
    tenant's choices (``exposure_form.js``).
    """

    engine_id = EngineChoiceField(label=_("Engine"))

    class Media:
        js = ["admin/js/jquery.init.js", "mcp_gateway/exposure_form.js"]

    class Meta:
        model = Exposure
        fields = ["tenant", "engine_id", "requires_confirmation"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast("forms.ChoiceField", self.fields["engine_id"])
        field.choices = [("", "---------"), *engine_choices(self.chosen_tenant())]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        tenant, engine_id = data.get("tenant"), data.get("engine_id")
        if (
            isinstance(tenant, Tenant)
            and engine_id
            and tenant.exposures.filter(engine_id=engine_id).exists()
        ):
            self.add_error(
                "engine_id",
                ValidationError(
                    _(
                        "Engine %(engine)s is already exposed to %(tenant)s; "
                        "choose another."
                    ),
                    params={"engine": engine_id, "tenant": tenant},
                ),
            )
        return data

    def validate_unique(self) -> None:
        """The bookkeeping service and ``clean`` judge duplicates."""

    def chosen_tenant(self) -> Tenant | None:
        """The tenant posted, or the one preselected by ``?tenant=<pk>``."""
        raw = self.data.get("tenant") if self.is_bound else self.initial.get("tenant")
        if not raw:
            return None
        try:
            return Tenant.objects.filter(pk=raw).first()
        except (ValueError, TypeError, ValidationError):
            return None


class ApiTokenForm(forms.ModelForm[ApiToken]):
    """The fields of a new token; the secret is made by ``tokens.issue``."""

    scopes = forms.MultipleChoiceField(
        label=_("scopes"),
        choices=[(scope, scope) for scope in sorted(known_scopes.KNOWN)],
        initial=list(known_scopes.TOKEN_DEFAULT),
        widget=forms.CheckboxSelectMultiple,
    )
    expires_in = forms.IntegerField(
        label=_("lifetime (seconds)"),
        min_value=1,
        required=False,
        help_text=_("Leave empty for a token that does not expire."),
    )

    issued_by_superuser = False
    """Set by the admin for the requesting user; only then may the token's
    user be a superuser."""

    class Meta:
        model = ApiToken
        fields = [
            "tenant",
            "user",
            "name",
            "scopes",
            "calls_per_day",
            "calls_per_month",
        ]

    def clean_user(self) -> Any:
        user = self.cleaned_data["user"]
        if getattr(user, "is_superuser", False) and not self.issued_by_superuser:
            raise ValidationError(
                _("Only a superuser may issue a token for a superuser.")
            )
        return user
