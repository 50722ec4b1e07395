"""Query-string filters: ``?search=`` (DRF's) and boolean fields."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework import exceptions
from rest_framework.filters import BaseFilterBackend
from rest_framework.request import Request

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
