"""Engine secrets: write-only. A page shows who set a secret and when, never
its value; "replace" stores a new one."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_post_parameters

from engines_app.engine import required_secrets
from engines_app.registry import default_registry
from mcp_gateway.admin.permissions import ActionPermissions
from mcp_gateway.engine_secrets import service
from mcp_gateway.engine_secrets.keys import SecretKeyError, require
from mcp_gateway.engine_secrets.models import EngineSecret
from mcp_gateway.models import Tenant

sensitive = method_decorator(sensitive_post_parameters("value", "replace"))


def secret_choices() -> list[tuple[str, str]]:
    """``engine id|NAME`` for every secret an installed engine declares."""
    return [
        (f"{engine.id}|{name}", f"{engine.id}: {name}")
        for engine in sorted(default_registry, key=lambda e: e.id)
        for name in required_secrets(engine)
    ]


def _value_field(label: Any, required: bool) -> forms.CharField:
    return forms.CharField(
        label=label,
        required=required,
        strip=False,
        max_length=service.MAX_VALUE_CHARS,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=_("Write-only: stored encrypted, never shown again."),
    )


class SecretAddForm(forms.ModelForm[EngineSecret]):
    secret = forms.ChoiceField(label=_("engine and secret"), choices=())
    value = _value_field(_("value"), required=True)

    class Meta:
        model = EngineSecret
        fields = ["tenant"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["secret"].choices = secret_choices()  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        engine_id, _sep, name = str(data.get("secret", "")).partition("|")
        data["engine_id"], data["name"] = engine_id, name
        _check_keys(self)
        return data


class SecretReplaceForm(forms.ModelForm[EngineSecret]):
    replace = _value_field(_("replace with"), required=False)

    class Meta:
        model = EngineSecret
        fields: list[str] = []

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("replace"):
            _check_keys(self)
        return data


def _check_keys(form: forms.BaseForm) -> None:
    try:
        require()
    except SecretKeyError as exc:
        form.add_error(None, str(exc))


@admin.register(EngineSecret)
class EngineSecretAdmin(ActionPermissions, admin.ModelAdmin[EngineSecret]):
    list_display = ["name", "engine_id", "tenant", "set_at", "set_by_name"]
    list_filter = ["tenant"]
    search_fields = ["name", "engine_id", "tenant__slug"]
    list_select_related = ["tenant"]
    shown = ["tenant", "engine_id", "name", "set_at", "set_by_name"]

    def get_fields(self, request: HttpRequest, obj: EngineSecret | None = None) -> Any:
        return [*self.shown, "replace"] if obj else ["tenant", "secret", "value"]

    def get_readonly_fields(
        self, request: HttpRequest, obj: EngineSecret | None = None
    ) -> Any:
        return self.shown if obj else []

    def get_form(
        self,
        request: HttpRequest,
        obj: EngineSecret | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[ModelForm[EngineSecret]]:
        kwargs["form"] = SecretReplaceForm if obj else SecretAddForm
        kwargs["fields"] = None
        return super().get_form(request, obj, change, **kwargs)

    @sensitive
    def add_view(
        self,
        request: HttpRequest,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        return super().add_view(request, form_url, extra_context)

    @sensitive
    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        return super().change_view(request, object_id, form_url, extra_context)

    def save_model(
        self, request: HttpRequest, obj: EngineSecret, form: Any, change: bool
    ) -> None:
        data = form.cleaned_data
        if change and not data.get("replace"):
            return
        tenant = obj.tenant if change else data["tenant"]
        engine_id = obj.engine_id if change else data["engine_id"]
        name = obj.name if change else data["name"]
        value = data["replace"] if change else data["value"]
        try:
            stored = service.set_secret(tenant, engine_id, name, value, by=request.user)
        except (service.SecretError, SecretKeyError) as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        obj.pk, obj._state.adding = stored.pk, False
        obj.tenant, obj.engine_id, obj.name = tenant, engine_id, name

    def delete_model(self, request: HttpRequest, obj: EngineSecret) -> None:
        service.delete_secret(obj.tenant, obj.engine_id, obj.name)

    def delete_queryset(
        self, request: HttpRequest, queryset: QuerySet[EngineSecret]
    ) -> None:
        for secret in queryset.select_related("tenant"):
            service.delete_secret(secret.tenant, secret.engine_id, secret.name)


def warn_missing(request: HttpRequest, tenant: Tenant) -> None:
    """A warning per exposed engine that lacks a secret it declares."""
    for engine_id, names in service.missing_by_engine(tenant).items():
        messages.warning(
            request,
            _(
                "The engine %(engine)s needs the secret(s) %(names)s, not set for this "
                "tenant: its calls answer an error until they are set."
            )
            % {"engine": engine_id, "names": ", ".join(names)},
        )
