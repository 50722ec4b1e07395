"""Serializers validate input and shape output; they never change state."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.contrib.auth import get_user_model
from rest_framework import serializers

from mcp_gateway import bookkeeping, users
from mcp_gateway import scopes as known_scopes
from mcp_gateway.audit.models import ExposureEvent, ToolCall
from mcp_gateway.engine_secrets.models import EngineSecret
from mcp_gateway.fingerprint import fingerprint
from mcp_gateway.forms import clean_origin
from mcp_gateway.models import ApiToken, Exposure, Membership, Tenant
from mcp_gateway.naming import tool_name
from mcp_gateway.oauth.resource import resource_url

MAX_TOKEN_LIFETIME = 10 * 365 * 24 * 3600  # ten years, in seconds


class TenantSerializer(serializers.ModelSerializer[Tenant]):
    allowed_origins = serializers.ListField(
        child=serializers.CharField(max_length=300), required=False
    )
    engine_config = serializers.DictField(required=False)
    mcp_url = serializers.SerializerMethodField()
    tool_status = serializers.SerializerMethodField(
        help_text="How many of the tenant's exposures are live, held, "
        "changed and stale (see an exposure's status)."
    )

    class Meta:
        model = Tenant
        fields = [
            "slug",
            "name",
            "is_active",
            "allowed_origins",
            "engine_config",
            "calls_per_day",
            "calls_per_month",
            "token_calls_per_day",
            "token_calls_per_month",
            "catalog_version",
            "mcp_url",
            "tool_status",
            "created_at",
        ]
        read_only_fields = ["catalog_version", "created_at"]

    def get_mcp_url(self, obj: Tenant) -> str:
        return resource_url(obj.slug)

    def get_tool_status(self, obj: Tenant) -> dict[str, int]:
        counts = dict.fromkeys(bookkeeping.STATUSES, 0)
        for state in bookkeeping.states(obj.exposures.all()):
            counts[state.status] += 1
        return counts

    def validate_slug(self, value: str) -> str:
        if self.instance is not None and value != self.instance.slug:
            raise serializers.ValidationError(
                "A tenant's slug is fixed once created: its URL, OAuth "
                "audiences and engine data hang on it."
            )
        return value

    def validate_allowed_origins(self, value: list[str]) -> list[str]:
        return [clean_origin(origin) for origin in value]


def user_field(**kwargs: Any) -> serializers.SlugRelatedField[Any]:
    """A user by the value of the user model's ``USERNAME_FIELD``.

    The API calls it ``username`` whatever the field is (an email on a site
    that signs in by email).
    """
    return serializers.SlugRelatedField(slug_field=users.login_field(), **kwargs)


class MembershipSerializer(serializers.ModelSerializer[Membership]):
    username = user_field(
        source="user",
        queryset=get_user_model()._default_manager.all(),
        help_text="The user's login: the value of the user model's USERNAME_FIELD.",
    )

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]
        read_only_fields = ["created_at"]


class ExposureSerializer(serializers.ModelSerializer[Exposure]):
    """``engine_id`` is the only input; the bookkeeping service judges it."""

    engine_id = serializers.CharField(max_length=200)
    status = serializers.SerializerMethodField(
        help_text="live; held (the engine's definition changed since it was "
        'approved: not served until approved again, DRIFT_POLICY "hold"); '
        'changed (changed and served all the same, DRIFT_POLICY "serve"); '
        "stale (engine not installed)."
    )
    exposed_by = user_field(read_only=True, allow_null=True)
    installed_version = serializers.SerializerMethodField(
        help_text="The installed engine's version; null when not installed."
    )
    installed_fingerprint = serializers.SerializerMethodField(
        help_text="The installed definition's fingerprint; differs from "
        "fingerprint (the approved one) when the tool changed; null when "
        "the engine is not installed."
    )
    installed_definition = serializers.SerializerMethodField(
        help_text="The installed tool definition (name, title, description, "
        "schemas, hints), to compare with approved_definition; null when "
        "the engine is not installed."
    )
    requires_confirmation = serializers.BooleanField(
        required=False,
        help_text="The gateway asks before each call runs: the caller confirms "
        'the exact arguments, or staff approve the call (CALL_APPROVAL "staff"); '
        "a client that cannot be asked is refused. Set it on POST or PATCH.",
    )

    class Meta:
        model = Exposure
        fields = [
            "engine_id",
            "tool_name",
            "engine_version",
            "installed_version",
            "status",
            "fingerprint",
            "approved_definition",
            "installed_fingerprint",
            "installed_definition",
            "requires_confirmation",
            "exposed_by",
            "created_at",
        ]
        read_only_fields = [
            "tool_name",
            "engine_version",
            "fingerprint",
            "approved_definition",
            "created_at",
        ]

    def get_status(self, obj: Exposure) -> str:
        return bookkeeping.states([obj])[0].status

    def get_installed_version(self, obj: Exposure) -> str | None:
        engine = bookkeeping.states([obj])[0].engine
        return None if engine is None else str(engine.version)

    def get_installed_fingerprint(self, obj: Exposure) -> str | None:
        engine = bookkeeping.states([obj])[0].engine
        return None if engine is None else fingerprint(engine)

    def get_installed_definition(self, obj: Exposure) -> dict[str, Any] | None:
        return bookkeeping.states([obj])[0].installed_definition


class SkippedSerializer(serializers.Serializer[Any]):
    engine_id = serializers.CharField()
    reason = serializers.CharField()


class ExposeAllSerializer(serializers.Serializer[Any]):
    exposed = ExposureSerializer(many=True, read_only=True)
    skipped = SkippedSerializer(
        many=True,
        read_only=True,
        help_text="Engines not exposed, and why (a tool name collision, an "
        "invalid engine).",
    )


class ExposureEventSerializer(serializers.ModelSerializer[ExposureEvent]):
    """Who changed which exposures of the tenant, when, and through what."""

    by = serializers.CharField(
        source="actor_name", read_only=True, help_text="The user's login, or empty."
    )

    class Meta:
        model = ExposureEvent
        fields = [
            "id",
            "created_at",
            "action",
            "engine_ids",
            "catalog_version",
            "by",
            "via",
        ]
        read_only_fields = fields


class ApiTokenSerializer(serializers.ModelSerializer[ApiToken]):
    username = user_field(
        source="user",
        queryset=get_user_model()._default_manager.all(),
        required=False,
        help_text="The token's user (the value of the user model's "
        "USERNAME_FIELD); the requesting staff user by default. Becomes a "
        "member of the tenant.",
    )
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=sorted(known_scopes.KNOWN)),
        default=list(known_scopes.TOKEN_DEFAULT),
        allow_empty=False,
    )
    expires_in = serializers.IntegerField(
        write_only=True,
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_TOKEN_LIFETIME,
        help_text="Lifetime in seconds; none for a token that does not expire.",
    )

    class Meta:
        model = ApiToken
        fields = [
            "prefix",
            "name",
            "username",
            "scopes",
            "expires_in",
            "calls_per_day",
            "calls_per_month",
            "created_at",
            "expires_at",
            "revoked_at",
            "last_used_at",
        ]
        read_only_fields = [
            "prefix",
            "created_at",
            "expires_at",
            "revoked_at",
            "last_used_at",
        ]


class IssuedTokenSerializer(ApiTokenSerializer):
    token = serializers.SerializerMethodField(
        help_text="The whole token, shown only in this response."
    )

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]

    def get_token(self, obj: ApiToken) -> str:
        return str(self.context["secret"])


class ToolCallSerializer(serializers.ModelSerializer[ToolCall]):
    """An audited tool call; names are copies, kept when the tenant goes."""

    tenant = serializers.CharField(
        source="tenant_slug", read_only=True, help_text="Tenant slug."
    )

    class Meta:
        model = ToolCall
        fields = [
            "id",
            "created_at",
            "tenant",
            "tool_name",
            "engine_id",
            "engine_version",
            "outcome",
            "duration_ms",
            "user",
            "token_prefix",
            "request_id",
            "protocol_version",
            "error_code",
            "arguments",
        ]
        read_only_fields = fields


class HintsSerializer(serializers.Serializer[Any]):
    # Shadows Field.read_only only on the class; DRF moves declared fields
    # into ``_declared_fields``, so the attribute keeps its meaning.
    read_only = serializers.BooleanField(allow_null=True)  # type: ignore[assignment]
    destructive = serializers.BooleanField(allow_null=True)
    idempotent = serializers.BooleanField(allow_null=True)
    open_world = serializers.BooleanField(allow_null=True)


class EngineSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    tool_name = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    version = serializers.CharField()
    input_schema = serializers.DictField(allow_null=True)
    output_schema = serializers.DictField(allow_null=True)
    hints = HintsSerializer(allow_null=True)


def hints_of(engine: Any) -> dict[str, Any] | None:
    hints = getattr(engine, "hints", None)
    if dataclasses.is_dataclass(hints) and not isinstance(hints, type):
        return dataclasses.asdict(hints)
    return None


def describe(engine: Any) -> dict[str, Any]:
    """An installed engine as ``EngineSerializer`` shows it."""
    return {
        "id": engine.id,
        "tool_name": tool_name(engine.id),
        "name": engine.name,
        "description": engine.description,
        "version": engine.version,
        "input_schema": getattr(engine, "input_schema", None),
        "output_schema": getattr(engine, "output_schema", None),
        "hints": hints_of(engine),
    }


class UsageSerializer(serializers.Serializer[dict[str, Any]]):
    """Calls of one tenant's tool on one UTC day with one outcome."""

    tenant = serializers.CharField()
    tool = serializers.CharField()
    day = serializers.CharField(help_text="A UTC date, YYYY-MM-DD.")
    outcome = serializers.CharField()
    calls = serializers.IntegerField()


class RouteSerializer(serializers.Serializer[Any]):
    method = serializers.CharField()
    path = serializers.CharField()
    needs = serializers.CharField(help_text="Django permissions, besides is_staff.")
    note = serializers.CharField()


class RootSerializer(serializers.Serializer[Any]):
    schema = serializers.URLField(help_text="The OpenAPI schema.")
    docs = serializers.URLField(help_text="Swagger UI.")
    routes = RouteSerializer(many=True)


class EngineSecretSerializer(serializers.ModelSerializer[EngineSecret]):
    """A secret by name: ``value`` is write-only and never shown again."""

    value = serializers.CharField(
        write_only=True,
        trim_whitespace=False,
        style={"input_type": "password"},
        help_text="The secret; stored encrypted, never returned.",
    )
    set_by = serializers.CharField(source="set_by_name", read_only=True)

    class Meta:
        model = EngineSecret
        fields = ["engine_id", "name", "value", "set_at", "set_by"]
        read_only_fields = ["set_at"]
        # Replacing goes through the same POST: no unique-together refusal.
        validators: list[Any] = []
