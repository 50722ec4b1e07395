"""What an authorization server row may say: issuers, algorithms, scopes."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from mcp_gateway import scopes
from mcp_gateway.conf import gateway_settings
from mcp_gateway.oauth import net

DEFAULT_ALGORITHMS = ("RS256", "ES256")
SAFE_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
)
"""Asymmetric algorithms only: never ``none``, never HS* (a shared secret)."""


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def validate_server_url(value: str) -> None:
    """Accept https, or http on loopback when the setting allows it, to a
    host the gateway may fetch from (``net``); a host that does not resolve
    now passes (``unresolved_hosts`` warns of it) and is vetted at each fetch.

    Raises:
        ValidationError: any other URL.
    """
    _validate_scheme(value)
    try:
        net.vet(value)
    except net.Refused as exc:
        raise ValidationError(
            _("%(value)s: refused: %(reason)s."),
            params={"value": value, "reason": str(exc)},
        ) from exc
    except net.Unresolved:
        return


def _validate_scheme(value: str) -> None:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ValidationError(
            _("%(value)s is not a URL."), params={"value": value}
        ) from exc
    if parts.scheme == "https" and parts.hostname:
        return
    insecure_ok = gateway_settings().ALLOW_INSECURE_LOOPBACK_ISSUERS
    if parts.scheme == "http" and insecure_ok and is_loopback(parts.hostname):
        return
    raise ValidationError(
        _("%(value)s: authorization servers must use https://."),
        params={"value": value},
    )


def unresolved_hosts(urls: Iterable[str]) -> list[str]:
    """The hosts of ``urls`` that do not resolve now (a save-time warning)."""
    hosts = []
    for url in urls:
        try:
            net.vet(url)
        except net.Unresolved as exc:
            hosts.append(str(exc))
        except net.Refused:
            continue
    return sorted(set(hosts))


def validate_algorithms(value: Iterable[str]) -> None:
    """Raises: ValidationError: an algorithm outside the safe list."""
    unsafe = sorted(set(value) - SAFE_ALGORITHMS)
    if unsafe:
        raise ValidationError(
            _("Not allowed: %(algs)s. Use asymmetric algorithms such as RS256."),
            params={"algs": ", ".join(map(str, unsafe))},
        )


def validate_scopes(value: Iterable[str]) -> None:
    """Raises: ValidationError: a scope that is not a scope token."""
    for scope in value:
        if not isinstance(scope, str) or not scope or not _scope_chars(scope):
            raise ValidationError(
                _("%(scope)r is not a scope."), params={"scope": scope}
            )


def _scope_chars(scope: str) -> bool:
    # RFC 6749 scope-token: %x21 / %x23-5B / %x5D-7E
    return all(c == "!" or "#" <= c <= "[" or "]" <= c <= "~" for c in scope)


def allowed_algorithms(configured: Iterable[str]) -> list[str]:
    """The configured algorithms that are safe, or the default pair."""
    chosen = [alg for alg in configured if alg in SAFE_ALGORITHMS]
    return chosen or list(DEFAULT_ALGORITHMS)


def published_scopes(configured: Iterable[str]) -> list[str]:
    return list(configured) or list(scopes.PUBLISHED_DEFAULT)
