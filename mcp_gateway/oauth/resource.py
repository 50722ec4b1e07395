"""The canonical resource URL of a mount and where its metadata lives.

Both follow the site's script prefix (``FORCE_SCRIPT_NAME``, or the
``SCRIPT_NAME`` a server such as gunicorn passes): ``reverse()`` includes
it. ``PUBLIC_BASE_URL`` gives the scheme and host only (check
``mcp_gateway.E011`` refuses a path); a site served under a path prefix
says so with ``FORCE_SCRIPT_NAME`` or ``SCRIPT_NAME``, never in the base
URL, so the prefix is never counted twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from django.urls import NoReverseMatch, get_script_prefix, reverse

from mcp_gateway.conf import gateway_settings

WELL_KNOWN = "/.well-known/oauth-protected-resource"
METADATA_ROUTE = "mcp_gateway_well_known:protected-resource"


def public_origin() -> str:
    """``scheme://host[:port]`` of ``PUBLIC_BASE_URL`` ("" when unset)."""
    base = gateway_settings().PUBLIC_BASE_URL
    parts = urlsplit(base)
    if not parts.scheme or not parts.netloc:
        return base.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}"


def resource_url(slug: str) -> str:
    """The public origin + the mount's path, without a trailing slash."""
    return public_origin() + _mount_path(slug)


def metadata_url(slug: str) -> str:
    """Where this site serves the mount's RFC 9728 metadata.

    The well-known document's route (``mcp_gateway.urls.well_known``) with
    the mount's path relative to the script prefix: at a site's root this is
    RFC 9728's own location (the well-known prefix inserted before the
    resource's path); under a prefix it is the same location inside the
    prefix, the only place the site serves. Without the well-known routes
    installed, RFC 9728's location at the host's root.
    """
    mount = _mount_path(slug)
    prefix = get_script_prefix()
    relative = mount[len(prefix) :] if mount.startswith(prefix) else mount[1:]
    try:
        path = reverse(METADATA_ROUTE, kwargs={"resource_path": relative})
    except NoReverseMatch:
        path = WELL_KNOWN + mount
    parts = urlsplit(resource_url(slug))
    return f"{parts.scheme}://{parts.netloc}{path}"


def _mount_path(slug: str) -> str:
    return reverse("mcp_gateway:endpoint", kwargs={"slug": slug}).rstrip("/")


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
