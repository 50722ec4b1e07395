"""The API's OpenAPI parts, which need drf-spectacular (the ``api-docs`` extra).

The API itself needs only DRF (``rest_framework`` and
``rest_framework.authtoken`` in ``INSTALLED_APPS``). The schema and docs
routes (``schema/``, ``docs/``) answer only when ``drf_spectacular`` is
installed and in ``INSTALLED_APPS``; otherwise they are the API's JSON 404,
and the schema decorators on the views are no-ops.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from django.apps import apps

SPECTACULAR = importlib.util.find_spec("drf_spectacular") is not None

if SPECTACULAR:
    from drf_spectacular.utils import OpenApiParameter, extend_schema
else:  # pragma: no cover - exercised by the host-site suite

    def extend_schema(  # type: ignore[misc]
        *args: Any, **kwargs: Any
    ) -> Callable[[Any], Any]:
        return lambda view: view

    class OpenApiParameter:  # type: ignore[no-redef]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass


__all__ = ["OpenApiParameter", "enabled", "extend_schema", "view_schema"]


def enabled() -> bool:
    """Whether the schema and docs routes answer."""
    return SPECTACULAR and apps.is_installed("drf_spectacular")


def view_schema() -> Any:
    """The views' schema generator: the gateway's own, or DRF's default."""
    if not SPECTACULAR:
        from rest_framework.schemas import DefaultSchema

        return DefaultSchema()
    from mcp_gateway.api.schema import GatewayAutoSchema

    return GatewayAutoSchema()
