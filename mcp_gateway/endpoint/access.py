"""Who may see and who may call a tool: groups hide, scopes refuse.

A tool restricted to groups the principal is in none of is absent from
``tools/list`` and unknown in ``tools/call`` (one rule, ``Catalog.visible_to``).
Scopes never hide a tool: ``mcp:tools`` covers every tool, ``mcp:tools:read``
the tools hinted read-only; a call the scopes do not cover is HTTP 403
``insufficient_scope`` so an OAuth client can step up.
"""

from __future__ import annotations

from typing import Any

from mcp_gateway import scopes as known
from mcp_gateway.catalog import Catalog, CatalogEntry


def groups_of(user: Any, catalog: Catalog) -> frozenset[str]:
    """The user's group names; read (one query) only if some tool is restricted."""
    if user is None or not catalog.restricted:
        return frozenset()
    return frozenset(user.groups.values_list("name", flat=True))


def covers(scopes: frozenset[str], entry: CatalogEntry) -> bool:
    """True when ``scopes`` allow calling the tool of ``entry``."""
    if known.TOOLS in scopes:
        return True
    hints = getattr(entry.engine, "hints", None)
    return known.TOOLS_READ in scopes and getattr(hints, "read_only", None) is True


def lacks_scope(
    message: dict[str, Any], catalog: Catalog, scopes: frozenset[str]
) -> bool:
    """True for a ``tools/call`` of a visible tool the scopes do not cover."""
    if message.get("method") != "tools/call":
        return False
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    entry = catalog.get(name) if isinstance(name, str) else None
    return entry is not None and not covers(scopes, entry)
