"""Query-string filters: ``?search=`` (DRF's), booleans and the audit log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework import exceptions
from rest_framework.filters import BaseFilterBackend
from rest_framework.request import Request

from mcp_gateway.audit.models import Outcome

TRUE, FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def parse_bool(name: str, value: str) -> bool:
    """Read a boolean query parameter.

    Raises:
        ValidationError: the value is neither true nor false.
    """
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise exceptions.ValidationError({name: ["Must be true or false."]})


class BooleanFilter(BaseFilterBackend):
    """Filter on the view's ``boolean_filter_fields``: ``?is_active=false``."""

    def filter_queryset(
        self, request: Request, queryset: QuerySet[Any], view: Any
    ) -> QuerySet[Any]:
        for name in getattr(view, "boolean_filter_fields", ()):
            value = request.query_params.get(name)
            if value is not None:
                queryset = queryset.filter(**{name: parse_bool(name, value)})
        return queryset

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "required": False,
                "in": "query",
                "description": f"Only rows whose {name} is true or false.",
                "schema": {"type": "boolean"},
            }
            for name in getattr(view, "boolean_filter_fields", ())
        ]


def parse_time(name: str, value: str) -> datetime:
    """Read an ISO 8601 date and time; one without an offset is local time.

    Raises:
        ValidationError: the value is no date and time, or out of range.
    """
    try:
        parsed = parse_datetime(value)
        if parsed is None:
            raise ValueError(value)
        if timezone.is_naive(parsed):
            parsed = timezone.make_aware(parsed)
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError) as exc:
        raise exceptions.ValidationError(
            {name: ["Must be an ISO 8601 date and time, e.g. 2026-01-31T12:00:00Z."]}
        ) from exc


def parse_outcome(value: str) -> str:
    """Read an outcome name.

    Raises:
        ValidationError: no outcome has that name.
    """
    if value not in Outcome.values:
        raise exceptions.ValidationError(
            {"outcome": [f"Must be one of: {', '.join(Outcome.values)}."]}
        )
    return value


class ToolCallFilter(BaseFilterBackend):
    """Filter audited tool calls by tenant, tool, outcome and time."""

    def filter_queryset(
        self, request: Request, queryset: QuerySet[Any], view: Any
    ) -> QuerySet[Any]:
        params = request.query_params
        if (slug := params.get("tenant")) is not None:
            queryset = queryset.filter(tenant_slug=slug)
        if (tool := params.get("tool")) is not None:
            queryset = queryset.filter(tool_name=tool)
        if (outcome := params.get("outcome")) is not None:
            queryset = queryset.filter(outcome=parse_outcome(outcome))
        if (since := params.get("since")) is not None:
            queryset = queryset.filter(created_at__gte=parse_time("since", since))
        if (until := params.get("until")) is not None:
            queryset = queryset.filter(created_at__lt=parse_time("until", until))
        return queryset

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        text = {"type": "string"}
        time = {"type": "string", "format": "date-time"}
        return [
            _parameter("tenant", "Only calls to the tenant with this slug.", text),
            _parameter("tool", "Only calls of the tool with this name.", text),
            _parameter(
                "outcome",
                "Only calls with this outcome.",
                {"type": "string", "enum": list(Outcome.values)},
            ),
            _parameter("since", "Only calls at or after this time.", time),
            _parameter("until", "Only calls before this time.", time),
        ]


def _parameter(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "required": False,
        "in": "query",
        "description": description,
        "schema": schema,
    }
