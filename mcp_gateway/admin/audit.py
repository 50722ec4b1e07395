"""The audit log, read-only: tool calls and exposure changes."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from mcp_gateway.audit.models import ExposureEvent, ToolCall


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    """Rows are written by the gateway and removed by ``mcp_audit prune``."""

    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "tenant_slug",
        "tool_name",
        "outcome",
        "duration_ms",
        "user",
        "token_prefix",
        "protocol_version",
    ]
    list_filter = ["outcome", "protocol_version", "tenant"]
    search_fields = ["tenant_slug", "tool_name", "engine_id", "user", "token_prefix"]


@admin.register(ExposureEvent)
class ExposureEventAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "tenant_slug",
        "action",
        "engines",
        "actor_name",
        "via",
        "catalog_version",
    ]
    list_filter = ["action", "via", "tenant"]
    search_fields = ["tenant_slug", "actor_name"]

    @admin.display(description="engines")
    def engines(self, obj: ExposureEvent) -> str:
        return ", ".join(str(engine_id) for engine_id in obj.engine_ids)
