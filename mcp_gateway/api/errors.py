"""One error body for every API error: ``{"code": "…", "detail": "…"}``.

Validation errors add ``errors``, the per-field messages as DRF gives them.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from mcp_gateway.errors import (
    BookkeepingError,
    DuplicateExposure,
    ToolNameCollision,
)

CONFLICTS = (DuplicateExposure, ToolNameCollision)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Answer bookkeeping and DRF errors with the one error body."""
    if isinstance(exc, BookkeepingError):
        conflict = isinstance(exc, CONFLICTS)
        code = status.HTTP_409_CONFLICT if conflict else status.HTTP_400_BAD_REQUEST
        return Response({"code": exc.code, "detail": exc.message}, status=code)
    exc = _as_api_exception(exc)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.APIException):
        response.data = body(exc)
    return response


def body(exc: exceptions.APIException) -> dict[str, Any]:
    if isinstance(exc, exceptions.ValidationError):
        return {"code": "invalid", "detail": summary(exc.detail), "errors": exc.detail}
    code = getattr(exc.detail, "code", None) or exc.default_code
    return {"code": str(code), "detail": summary(exc.detail)}


def summary(detail: Any, path: str = "") -> str:
    """Flatten DRF's nested error detail into one readable line."""
    if isinstance(detail, dict):
        return " ".join(
            summary(value, _join(path, str(key))) for key, value in detail.items()
        )
    if isinstance(detail, list):
        return " ".join(summary(item, path) for item in detail)
    return f"{path}: {detail}" if path else str(detail)


def _join(path: str, key: str) -> str:
    if key == "non_field_errors":
        return path
    return f"{path}.{key}" if path else key


def _as_api_exception(exc: Exception) -> Exception:
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied()
    return exc
