"""The canonical resource URL of a mount and where its metadata lives."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from django.urls import reverse

from mcp_gateway.conf import gateway_settings

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def resource_url(slug: str) -> str:
    """``PUBLIC_BASE_URL`` + the mount's path, without a trailing slash."""
    path = reverse("mcp_gateway:endpoint", kwargs={"slug": slug})
    return gateway_settings().PUBLIC_BASE_URL.rstrip("/") + path.rstrip("/")


def metadata_url(slug: str) -> str:
    """The RFC 9728 metadata URL: the well-known prefix before the path."""
    parts = urlsplit(resource_url(slug))
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{parts.path}"


def same_resource(candidate: str, resource: str) -> bool:
    """Scheme and host compare case-insensitively; everything else exactly."""
    try:
        mine, theirs = urlsplit(resource), urlsplit(candidate)
    except ValueError:
        return False
    return (
        mine.scheme.lower() == theirs.scheme.lower()
        and mine.netloc.lower() == theirs.netloc.lower()
        and (mine.path, mine.query, mine.fragment)
        == (theirs.path, theirs.query, theirs.fragment)
    )


def audience_matches(audience: object, resource: str) -> bool:
    """``aud`` (a string or a list of strings) names ``resource``."""
    values: Iterable[object] = (
        [audience]
        if isinstance(audience, str)
        else audience
        if isinstance(audience, list)
        else []
    )
    return any(isinstance(v, str) and same_resource(v, resource) for v in values)
