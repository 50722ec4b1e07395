"""The OpenAPI schema: every operation documents the one error body."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

ERROR_STATUSES = ("400", "401", "403", "404")

Error = inline_serializer(
    "Error",
    fields={
        "code": serializers.CharField(),
        "detail": serializers.CharField(),
        "errors": serializers.DictField(
            required=False, help_text="Per-field messages of a validation error."
        ),
    },
)


class GatewayAutoSchema(AutoSchema):
    """Add the error responses each operation can give.

    A view lists extra statuses per action in ``error_statuses``, e.g.
    ``{"create": ("409",)}``.
    """

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        action = getattr(self.view, "action", None)
        extra = getattr(self.view, "error_statuses", {}).get(action, ())
        for code in (*ERROR_STATUSES, *extra):
            if code not in responses:
                responses[code] = self._get_response_for_code(  # type: ignore[no-untyped-call]
                    Error, code, direction=direction
                )
        return responses
