"""The admin: tenants, exposures, memberships and API tokens."""

from __future__ import annotations

from mcp_gateway import generics  # noqa: F401 - first: ModelAdmin[...] below
from mcp_gateway.admin.audit import ExposureEventAdmin, ToolCallAdmin
from mcp_gateway.admin.call_approvals import CallApprovalAdmin
from mcp_gateway.admin.engines import InstalledEngineAdmin
from mcp_gateway.admin.exposures import ExposureAdmin
from mcp_gateway.admin.memberships import MembershipAdmin
from mcp_gateway.admin.secrets import EngineSecretAdmin
from mcp_gateway.admin.tenants import TenantAdmin
from mcp_gateway.admin.tokens import ApiTokenAdmin

__all__ = [
    "ApiTokenAdmin",
    "CallApprovalAdmin",
    "EngineSecretAdmin",
    "ExposureAdmin",
    "ExposureEventAdmin",
    "InstalledEngineAdmin",
    "MembershipAdmin",
    "TenantAdmin",
    "ToolCallAdmin",
]
