"""Authenticate a bearer token through the site's auth backends.

``SIGNAL_BEARER_FAILURES`` (on by default) decides whether a failed bearer
authentication fires Django's ``user_login_failed``, as ``authenticate()``
does for every failure. Lockout tools listen to that signal: with it on,
failed MCP tokens count towards locking out an address (the admin's login
included); with it off they count for nothing. Either way each backend is
asked exactly as ``authenticate()`` asks it, so a backend that refuses a
locked-out request (django-axes' ``AxesStandaloneBackend``) still refuses.
The loop is ``authenticate()``'s own, with each backend's signature test
kept rather than redone per request (the signal is sent as it sends it).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from django.conf import settings
from django.contrib.auth import load_backend
from django.contrib.auth.signals import user_login_failed
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.views.decorators.debug import sensitive_variables

from mcp_gateway.conf import gateway_settings
from mcp_gateway.models import Tenant

SENSITIVE = re.compile("api|token|key|secret|password|signature", re.I)
"""The credentials ``authenticate()`` masks in ``user_login_failed``."""
CLEANSED = "********************"


@sensitive_variables("token", "credentials")
def authenticate_bearer(
    request: HttpRequest, token: str, tenant: Tenant | str
) -> Any | None:
    """The user the token authenticates for ``tenant``, or None."""
    credentials = {"bearer_token": token, "tenant": tenant}
    user = authenticate_quietly(request, **credentials)
    if user is None and gateway_settings().SIGNAL_BEARER_FAILURES:
        _signal_failure(request, credentials)
    return user


@sensitive_variables("credentials")
def authenticate_quietly(request: HttpRequest, **credentials: Any) -> Any | None:
    """``authenticate()`` without ``user_login_failed`` on failure.

    Each backend is asked as ``authenticate()`` asks it; whether its
    ``authenticate`` takes these credentials is worked out once per
    method and set of names, not per request.
    """
    for path in settings.AUTHENTICATION_BACKENDS:
        backend = load_backend(path)
        if not takes(backend.authenticate, request, credentials):
            continue  # this backend does not take these credentials
        try:
            user = backend.authenticate(request, **credentials)
        except PermissionDenied:
            return None  # this backend says stop, as authenticate() stops
        if user is not None:
            user.backend = path
            return user
    return None


_TAKES_SIZE = 256
_takes_cache: dict[tuple[Any, tuple[str, ...]], bool] = {}


def takes(method: Any, request: Any, credentials: dict[str, Any]) -> bool:
    """Whether ``method(request, **credentials)`` binds (``authenticate()``'s
    test); only the names matter, so a class's method is tested once."""
    function = getattr(method, "__func__", None)
    if function is None:  # not a plain method: test it each time
        return _binds(method, request, credentials)
    key = (function, tuple(credentials))
    known = _takes_cache.get(key)
    if known is None:
        if len(_takes_cache) >= _TAKES_SIZE:
            _takes_cache.clear()
        known = _takes_cache[key] = _binds(method, request, credentials)
    return known


def _binds(method: Any, request: Any, credentials: dict[str, Any]) -> bool:
    try:
        inspect.signature(method).bind(request, **credentials)
    except TypeError:
        return False
    return True


@sensitive_variables("credentials")
def _signal_failure(request: HttpRequest, credentials: dict[str, Any]) -> None:
    """``user_login_failed`` as ``authenticate()`` sends it."""
    cleaned = {
        key: CLEANSED if SENSITIVE.search(key) else value
        for key, value in credentials.items()
    }
    user_login_failed.send(
        sender="django.contrib.auth", credentials=cleaned, request=request
    )
