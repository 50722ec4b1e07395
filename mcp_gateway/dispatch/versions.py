"""The protocol revisions served: constants only, importable from any layer."""

from __future__ import annotations

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

HANDSHAKE_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
"""Handshake-era revisions served; 2024-11-05 is not one of them."""
DEFAULT_VERSION = "2025-03-26"
"""The revision a request without ``MCP-Protocol-Version`` is served at."""
SUPPORTED_VERSIONS = (*HANDSHAKE_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
