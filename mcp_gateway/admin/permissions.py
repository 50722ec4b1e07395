"""What the admin's actions need: ``@admin.action(permissions=[...])`` names.

Django offers an action only to users for whom every ``has_<name>_permission``
of its ``permissions`` is true, and refuses to run one it does not offer. The
names are the model permissions of ``mcp_gateway.permissions.ADMIN_ACTIONS``.
"""

from __future__ import annotations

from django.http import HttpRequest

from mcp_gateway import permissions


class ActionPermissions:
    """``has_<codename>_permission`` for each codename an action names."""

    def has_add_exposure_permission(self, request: HttpRequest) -> bool:
        return permissions.has(request.user, "add_exposure")

    def has_change_exposure_permission(self, request: HttpRequest) -> bool:
        return permissions.has(request.user, "change_exposure")

    def has_delete_exposure_permission(self, request: HttpRequest) -> bool:
        return permissions.has(request.user, "delete_exposure")

    def has_change_apitoken_permission(self, request: HttpRequest) -> bool:
        return permissions.has(request.user, "change_apitoken")

    def has_change_callapproval_permission(self, request: HttpRequest) -> bool:
        return permissions.has(request.user, "change_callapproval")
