"""Viewsets scope rows to a tenant; bookkeeping and tokens change them."""

from __future__ import annotations

from functools import cached_property
from typing import Any, cast

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from rest_framework import exceptions, mixins, status
from rest_framework.filters import SearchFilter
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping, permissions, tokens, users
from mcp_gateway.api import serializers
from mcp_gateway.api.base import StaffViewSet
from mcp_gateway.api.filters import BooleanFilter, ToolCallFilter
from mcp_gateway.api.openapi import OpenApiParameter, extend_schema
from mcp_gateway.audit import usage
from mcp_gateway.audit.models import ExposureEvent, ToolCall
from mcp_gateway.engine_secrets import service as secret_service
from mcp_gateway.engine_secrets.keys import SecretKeyError
from mcp_gateway.models import ApiToken, Exposure, Membership, Tenant


class TenantViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    StaffViewSet[Tenant],
):
    """Tenants by slug; ``PATCH {"is_active": false}`` disables one."""

    queryset = Tenant.objects.prefetch_related("exposures")  # tool_status
    serializer_class = serializers.TenantSerializer
    lookup_field = "slug"
    filter_backends = [SearchFilter, BooleanFilter]
    search_fields = ["slug", "name"]
    boolean_filter_fields = ["is_active"]


class TenantScopedViewSet(StaffViewSet[Any]):
    """Rows of the tenant named by the URL; an unknown tenant is 404."""

    @cached_property
    def tenant(self) -> Tenant:
        return get_object_or_404(Tenant, slug=self.kwargs["slug"])


class MembershipViewSet(
    mixins.ListModelMixin, mixins.DestroyModelMixin, TenantScopedViewSet
):
    """Members and their roles; POST adds a member or changes the role."""

    serializer_class = serializers.MembershipSerializer
    # ``username`` in the route is the value of the user model's
    # USERNAME_FIELD (an email on a site that signs in by email).
    lookup_field = f"user__{users.login_field()}"
    lookup_url_kwarg = "username"
    filter_backends = [SearchFilter]
    search_fields = users.search_fields()

    def get_queryset(self) -> QuerySet[Membership]:
        return self.tenant.memberships.select_related("user")

    @extend_schema(
        responses={
            201: serializers.MembershipSerializer,
            200: serializers.MembershipSerializer,
        }
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        if self.tenant.memberships.filter(user=user).exists():
            _require(request, "change_membership")
        membership, created = Membership.objects.update_or_create(
            tenant=self.tenant,
            user=user,
            defaults={"role": serializer.validated_data.get("role", "member")},
        )
        status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(self.get_serializer(membership).data, status=status_code)


class ExposureViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    TenantScopedViewSet,
):
    """POST exposes an engine, DELETE unexposes it, PATCH changes whether it
    requires confirmation: all via bookkeeping."""

    serializer_class = serializers.ExposureSerializer
    lookup_field = "engine_id"
    filter_backends = [SearchFilter]
    search_fields = ["engine_id", "tool_name"]
    # "expose-all" is the action's path, so an engine with that id is 405.
    error_statuses = {
        "create": ("409",),
        "expose_all": ("409",),
        "retrieve": ("405",),
        "partial_update": ("405",),
        "destroy": ("405",),
        "approve": ("400",),
    }

    def get_queryset(self) -> QuerySet[Exposure]:
        return self.tenant.exposures.select_related("exposed_by")

    def perform_create(self, serializer: BaseSerializer[Exposure]) -> None:
        engine_id = serializer.validated_data["engine_id"]
        user = self.request.user
        confirm = bool(serializer.validated_data.get("requires_confirmation"))
        serializer.instance = bookkeeping.expose(
            self.tenant, engine_id, by=user, via="api", requires_confirmation=confirm
        )

    def perform_update(self, serializer: BaseSerializer[Exposure]) -> None:
        exposure = serializer.instance
        confirm = serializer.validated_data.get("requires_confirmation")
        if exposure is not None and confirm is not None:
            user = self.request.user
            bookkeeping.require_confirmation(exposure, confirm, by=user, via="api")

    def perform_destroy(self, instance: Exposure) -> None:
        bookkeeping.unexpose(
            self.tenant, instance.engine_id, by=self.request.user, via="api"
        )

    @extend_schema(request=None, responses={200: serializers.ExposeAllSerializer})
    def expose_all(self, request: Request, slug: str) -> Response:
        """Expose every installed engine not exposed yet; idempotent.

        Engines that cannot be exposed (two deriving one tool name, an
        invalid engine) are skipped and listed with the reason."""
        result = bookkeeping.expose_all(self.tenant, by=request.user, via="api")
        exposed = serializers.ExposureSerializer(result.exposed, many=True).data
        skipped = serializers.SkippedSerializer(result.skipped, many=True).data
        return Response({"exposed": exposed, "skipped": skipped})

    @extend_schema(request=None, responses={200: serializers.ExposureSerializer})
    def approve(self, request: Request, slug: str, engine_id: str) -> Response:
        """Approve the installed definition of the exposed engine: a held
        tool is served again, at once, by every worker."""
        exposure = self.get_object()  # 404 unless exposed
        bookkeeping.approve(
            self.tenant, [exposure.engine_id], by=request.user, via="api"
        )
        exposure.refresh_from_db()
        return Response(self.get_serializer(exposure).data)


class ExposureEventViewSet(mixins.ListModelMixin, TenantScopedViewSet):
    """The tenant's exposure history (expose, unexpose, approve, clear,
    drift), newest first; read-only."""

    serializer_class = serializers.ExposureEventSerializer
    filter_backends: list[Any] = []

    def get_queryset(self) -> QuerySet[ExposureEvent]:
        return ExposureEvent.objects.filter(tenant=self.tenant).order_by(
            "-created_at", "-pk"
        )


class ApiTokenViewSet(
    mixins.ListModelMixin, mixins.CreateModelMixin, TenantScopedViewSet
):
    """Tenant API tokens: POST returns the secret once, DELETE revokes."""

    serializer_class = serializers.ApiTokenSerializer
    lookup_field = "prefix"
    filter_backends = [SearchFilter]
    search_fields = ["prefix", "name", *users.search_fields()]

    def get_queryset(self) -> QuerySet[ApiToken]:
        return self.tenant.tokens.select_related("user")

    @extend_schema(responses={201: serializers.IssuedTokenSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = data.get("user") or cast("User", request.user)
        if _is_superuser(user) and not _is_superuser(request.user):
            raise exceptions.PermissionDenied(
                "Only a superuser may issue a token for a superuser."
            )
        issued = tokens.issue(
            self.tenant,
            user,
            scopes=data["scopes"],
            expires_in=data.get("expires_in"),
            name=data.get("name", ""),
            calls_per_day=data.get("calls_per_day"),
            calls_per_month=data.get("calls_per_month"),
        )
        shown = serializers.IssuedTokenSerializer(
            issued.token, context={"secret": issued.secret}
        )
        return Response(shown.data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Revoke the token; revoking a revoked token changes nothing."""
        tokens.revoke(self.get_object().prefix)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RootViewSet(StaffViewSet[Any]):
    """The API's routes, what each needs, and links to the schema and docs."""

    pagination_class = None  # type: ignore[assignment]
    filter_backends: list[Any] = []

    def get_queryset(self) -> QuerySet[Any]:
        return Tenant.objects.none()  # the browsable API's filter form asks

    @extend_schema(responses={200: serializers.RootSerializer})
    def index(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        base = request.build_absolute_uri(request.path)
        prefix = request.path
        routes = [
            {
                "method": route.method,
                "path": f"{prefix}{route.path}",
                "needs": permissions.describe(route.needs).replace("`", ""),
                "note": route.note,
            }
            for route in permissions.API_ROUTES
        ]
        return Response(
            {"schema": f"{base}schema/", "docs": f"{base}docs/", "routes": routes}
        )


class EngineSecretViewSet(
    mixins.ListModelMixin, mixins.DestroyModelMixin, TenantScopedViewSet
):
    """The tenant's engine secrets by name; values are write-only.

    POST stores or replaces one (replacing also needs
    ``change_enginesecret``); DELETE removes one. No answer holds a value.
    """

    serializer_class = serializers.EngineSecretSerializer
    filter_backends = [SearchFilter]
    search_fields = ["engine_id", "name"]

    def get_queryset(self) -> QuerySet[Any]:
        return self.tenant.secrets.all()

    def get_object(self) -> Any:
        return get_object_or_404(
            self.get_queryset(),
            engine_id=self.kwargs["engine_id"],
            name=self.kwargs["name"],
        )

    @extend_schema(
        responses={
            201: serializers.EngineSecretSerializer,
            200: serializers.EngineSecretSerializer,
        }
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # As sensitive_post_parameters("value") marks it for error reports.
        request._request.sensitive_post_parameters = ("value",)  # type: ignore[attr-defined]
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        engine_id, name = data["engine_id"], data["name"]
        exists = self.tenant.secrets.filter(engine_id=engine_id, name=name).exists()
        if exists:
            _require(request, "change_enginesecret")
        try:
            secret = secret_service.set_secret(
                self.tenant, engine_id, name, data["value"], by=request.user
            )
        except (secret_service.SecretError, SecretKeyError) as exc:
            raise exceptions.ValidationError({"value": [str(exc)]}) from None
        code = status.HTTP_200_OK if exists else status.HTTP_201_CREATED
        return Response(self.get_serializer(secret).data, status=code)

    def perform_destroy(self, instance: Any) -> None:
        secret_service.delete_secret(self.tenant, instance.engine_id, instance.name)


class EngineViewSet(mixins.ListModelMixin, StaffViewSet[Any]):
    """Installed engines, whether exposed anywhere or not."""

    serializer_class = serializers.EngineSerializer
    filter_backends: list[Any] = []

    def get_queryset(self) -> QuerySet[Any]:
        return Exposure.objects.none()  # the browsable API's filter form asks

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "search", str, description="Part of the id, name or description."
            )
        ]
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        engines = [serializers.describe(engine) for engine in default_registry]
        term = request.query_params.get("search", "").lower()
        if term:
            engines = [e for e in engines if _matches(e, term)]
        page = self.paginate_queryset(engines)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class ToolCallViewSet(mixins.ListModelMixin, StaffViewSet[ToolCall]):
    """The audit log of tool calls, newest first; read-only."""

    queryset = ToolCall.objects.order_by("-created_at", "-pk")
    serializer_class = serializers.ToolCallSerializer
    filter_backends = [ToolCallFilter]


class UsageViewSet(mixins.ListModelMixin, StaffViewSet[ToolCall]):
    """Calls per tenant, tool, UTC day and outcome, from the audit log."""

    serializer_class = serializers.UsageSerializer  # type: ignore[assignment]
    filter_backends: list[Any] = []

    def get_queryset(self) -> QuerySet[ToolCall]:
        return ToolCall.objects.none()  # the browsable API's filter form asks

    @extend_schema(
        parameters=[
            OpenApiParameter("tenant", str, description="Only this tenant's calls."),
            OpenApiParameter(
                "since",
                str,
                description="From this date (UTC midnight) or ISO 8601 time on.",
            ),
            OpenApiParameter(
                "until", str, description="Before this date or ISO 8601 time."
            ),
        ]
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = request.query_params
        since = _moment(params, "since")
        until = _moment(params, "until")
        if since is not None and until is not None and since >= until:
            raise exceptions.ValidationError({"until": ["Must be after since."]})
        found = usage.rows(params.get("tenant"), since, until)  # one query
        page = self.paginate_queryset(found)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


def _moment(params: Any, name: str) -> Any:
    value = params.get(name)
    if value is None:
        return None
    try:
        return usage.parse_moment(value)
    except ValueError as exc:
        raise exceptions.ValidationError(
            {name: ["Must be a date (2026-12-01) or an ISO 8601 date and time."]}
        ) from exc


def _require(request: Request, codename: str) -> None:
    """Refuse (403) unless the user holds ``mcp_gateway.<codename>``."""
    if not permissions.has(request.user, codename):
        raise exceptions.PermissionDenied()


def _is_superuser(user: Any) -> bool:
    return bool(getattr(user, "is_superuser", False))


def _matches(engine: dict[str, Any], term: str) -> bool:
    fields = (engine["id"], engine["name"], engine["description"])
    return any(term in field.lower() for field in fields)


def not_found(request: HttpRequest) -> JsonResponse:
    """The API's 404 for paths no route matches, in the one error shape."""
    return JsonResponse({"code": "not_found", "detail": "Not found."}, status=404)
