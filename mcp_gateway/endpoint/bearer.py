"""Authenticate a bearer token through the site's auth backends.

``SIGNAL_BEARER_FAILURES`` (on by default) decides whether a failed bearer
authentication fires Django's ``user_login_failed``, as ``authenticate()``
does for every failure. Lockout tools listen to that signal: with it on,
failed MCP tokens count towards locking out an address (the admin's login
included); with it off they count for nothing. Either way each backend is
asked exactly as ``authenticate()`` asks it, so a backend that refuses a
locked-out request (django-axes' ``AxesStandaloneBackend``) still refuses.
"""

from __future__ import annotations

import inspect
from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate, load_backend
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from mcp_gateway.conf import gateway_settings
from mcp_gateway.models import Tenant


def authenticate_bearer(
    request: HttpRequest, token: str, tenant: Tenant | str
) -> Any | None:
    """The user the token authenticates for ``tenant``, or None."""
    if gateway_settings().SIGNAL_BEARER_FAILURES:
        return authenticate(request, bearer_token=token, tenant=tenant)
    return authenticate_quietly(request, bearer_token=token, tenant=tenant)


def authenticate_quietly(request: HttpRequest, **credentials: Any) -> Any | None:
    """``authenticate()`` without ``user_login_failed`` on failure."""
    for path in settings.AUTHENTICATION_BACKENDS:
        backend = load_backend(path)
        try:
            inspect.signature(backend.authenticate).bind(request, **credentials)
        except TypeError:
            continue  # this backend does not take these credentials
        try:
            user = backend.authenticate(request, **credentials)
        except PermissionDenied:
            return None  # this backend says stop, as authenticate() stops
        if user is not None:
            user.backend = path
            return user
    return None
