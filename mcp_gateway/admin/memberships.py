"""Memberships: who may reach a tenant's tools."""

from __future__ import annotations

from django.contrib import admin

from mcp_gateway.admin.users import UserFieldMixin
from mcp_gateway.models import Membership


@admin.register(Membership)
class MembershipAdmin(UserFieldMixin, admin.ModelAdmin[Membership]):
    """Users are searched by their login field (see ``admin.users``)."""

    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["tenant__slug", "tenant__name"]
    list_select_related = ["user", "tenant"]
    autocomplete_fields = ["tenant"]
