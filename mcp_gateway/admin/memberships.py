"""Memberships: who may reach a tenant's tools."""

from __future__ import annotations

from django.contrib import admin

from mcp_gateway.models import Membership


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["user__username", "user__email", "tenant__slug", "tenant__name"]
    list_select_related = ["user", "tenant"]
    autocomplete_fields = ["tenant", "user"]
