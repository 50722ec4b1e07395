"""What every API view shares: staff-only auth, paging, strict JSON, errors."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.db.models import Model
from rest_framework import exceptions, pagination, parsers, permissions, viewsets
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request

from mcp_gateway import permissions as table
from mcp_gateway.api import openapi
from mcp_gateway.api.errors import exception_handler

_M = TypeVar("_M", bound=Model)


class Pagination(pagination.PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class StrictJSONParser(parsers.JSONParser):
    """JSON every database can store: no NUL, no surrogates, finite numbers,
    and nesting the parser can follow (deeper is a 400, not a crash)."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
            if not storable(data):
                raise exceptions.ParseError(
                    "JSON must not hold NUL characters, lone surrogates or "
                    "numbers too large to store."
                )
        except RecursionError as exc:
            raise exceptions.ParseError("JSON nested too deep.") from exc
        return data


def storable(value: Any) -> bool:
    """Tell whether every string and number in a JSON value can be stored."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(storable(k) and storable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(storable(item) for item in value)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return "\x00" not in value
    return True


class ModelPermissions(permissions.BasePermission):
    """The Django model permissions the route's row of the table names.

    ``mcp_gateway.permissions`` maps each route (URL name and method) to
    what it needs: reads view or change, writes add, change or delete, as
    DRF's ``DjangoModelPermissions`` maps methods. A method the view does
    not serve passes here and is answered 405; one it serves without a row
    is refused.
    """

    message = "You do not have permission to perform this action."

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method == "OPTIONS":
            return True  # the route's description only; IsAdminUser applies
        match = request.resolver_match
        row = table.api_route(match.url_name if match else None, request.method or "")
        if row is None:
            return request.method not in view.allowed_methods
        return table.allows(request.user, row.needs)


class StaffViewSet(viewsets.GenericViewSet[_M]):
    """Staff only; DRF tokens for scripts, sessions (with CSRF) for browsers.

    Token authentication comes first so that an anonymous request gets 401
    with ``WWW-Authenticate: Token`` rather than 403. Each route then needs
    the model permissions of its row in ``mcp_gateway.permissions``.
    """

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [permissions.IsAdminUser, ModelPermissions]
    pagination_class = Pagination
    parser_classes = [StrictJSONParser]
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer]
    schema = openapi.view_schema()

    def get_exception_handler(self) -> Callable[..., Any]:
        return exception_handler

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if any("\x00" in str(value) for value in self.kwargs.values()):
            raise exceptions.NotFound()
        for key, values in request.query_params.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                raise exceptions.ValidationError(
                    {key: ["NUL characters are not allowed."]}
                )
