"""The OAuth scopes the gateway knows, in one place.

``mcp:tools`` covers every tool, ``mcp:tools:read`` the tools hinted
read-only (``access.covers``). Scopes never hide a tool; they refuse a call.
"""

from __future__ import annotations

TOOLS = "mcp:tools"
"""Call every tool the principal may see."""
TOOLS_READ = "mcp:tools:read"
"""Call only the tools whose engine declares ``Hints(read_only=True)``."""
KNOWN = frozenset({TOOLS, TOOLS_READ})
"""The scopes an API token may carry."""
TOKEN_DEFAULT = (TOOLS,)
"""An API token's scopes when none are given."""
PUBLISHED_DEFAULT = (TOOLS, TOOLS_READ)
"""What a mount's resource metadata publishes when its server lists none."""
ANONYMOUS = frozenset({TOOLS})
"""A request's scopes while authentication is disabled (development only)."""
