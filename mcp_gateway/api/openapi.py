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
    from drf_spectacular.utils import OpenApiParameter
    from drf_spectacular.utils import extend_schema as _extend_schema

    def extend_schema(**kwargs: Any) -> Callable[[Any], Any]:
        """drf-spectacular's ``extend_schema``, built on the gateway's schema.

        drf-spectacular builds a decorated method's schema on the site's
        ``DEFAULT_SCHEMA_CLASS`` (DRF's own unless the site points it at
        drf-spectacular's); the API must not depend on that global, so each
        method names the gateway's schema class first.
        """
        decorate = _extend_schema(**kwargs)

        def decorator(view: Any) -> Any:
            if getattr(view, "schema", None) is None:
                view.schema = _gateway_schema_class()
            return decorate(view)

        return decorator

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


def _gateway_schema_class() -> type[Any]:
    from mcp_gateway.api.schema import GatewayAutoSchema

    return GatewayAutoSchema


def view_schema() -> Any:
    """The views' schema generator: the gateway's own, or DRF's default."""
    if not SPECTACULAR:
        from rest_framework.schemas import DefaultSchema

        return DefaultSchema()
    return _gateway_schema_class()()
