"""What OAuth keeps in Django's (shared) cache; an unusable cache fails closed.

Key sets, metadata, introspection answers and the failure memory live in
the default cache. When it cannot be read or written (Redis down, say),
every operation raises ``AuthUnavailable``: the request is a JSON 503, as
for an unreachable authorization server, never a 500 and never a pass.
"""

from __future__ import annotations

from typing import Any

from django.core.cache import cache

from mcp_gateway.oauth.fetch import AuthUnavailable


def get(key: str) -> Any:
    try:
        return cache.get(key)
    except Exception as exc:  # any backend failure: connection, timeout, ...
        raise AuthUnavailable(f"cache unavailable: {type(exc).__name__}") from exc


def set(key: str, value: Any, timeout: float) -> None:
    try:
        cache.set(key, value, timeout)
    except Exception as exc:
        raise AuthUnavailable(f"cache unavailable: {type(exc).__name__}") from exc


def add(key: str, value: Any, timeout: float) -> bool:
    try:
        return bool(cache.add(key, value, timeout))
    except Exception as exc:
        raise AuthUnavailable(f"cache unavailable: {type(exc).__name__}") from exc


def delete(key: str) -> None:
    try:
        cache.delete(key)
    except Exception as exc:
        raise AuthUnavailable(f"cache unavailable: {type(exc).__name__}") from exc
