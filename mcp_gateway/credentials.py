"""What an auth backend verified besides the user: tenant, token, scopes.

Django's ``authenticate()`` returns a user and nothing else. A gateway
backend that accepts a bearer token hands what it verified to
:func:`grant`; the endpoint opens a slot with :func:`collecting` around the
``authenticate()`` call and reads the one :class:`Credential` back. The slot
is a context variable, so concurrent requests (threads or tasks) never see
each other's credentials, and a backend called anywhere else (a test, a
shell) grants into nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcp_gateway.models import ApiToken, Tenant


@dataclass(frozen=True)
class Credential:
    """A verified bearer credential: whose, for which tenant, allowing what."""

    user: Any
    tenant: Tenant
    scopes: frozenset[str]
    token: ApiToken | None = None
    """The API token row; ``None`` for an OAuth access token."""


class Granted:
    """The credentials granted while a slot was open (normally one)."""

    def __init__(self) -> None:
        self.credentials: list[Credential] = []

    def of(self, user: Any) -> Credential | None:
        """The credential granted for ``user``, the one ``authenticate()`` chose."""
        for credential in reversed(self.credentials):
            if credential.user is user:
                return credential
        return None


_slot: contextvars.ContextVar[Granted | None] = contextvars.ContextVar(
    "mcp_gateway_credentials", default=None
)


@contextlib.contextmanager
def collecting() -> Iterator[Granted]:
    """Collect the credentials the backends grant inside this block."""
    granted = Granted()
    token = _slot.set(granted)
    try:
        yield granted
    finally:
        _slot.reset(token)


def grant(credential: Credential) -> None:
    """Hand a verified credential to the endpoint that asked (if any)."""
    granted = _slot.get()
    if granted is not None:
        granted.credentials.append(credential)
