"""Signing keys of JWT issuers, cached in Django's cache.

A key set is fetched from the configured ``jwks_uri`` or from the URI the
issuer's metadata names (RFC 8414, then OpenID Connect discovery), kept for
``JWKS_CACHE_SECONDS`` and fetched again when a token names an unknown
``kid`` — at most once per ``REFRESH_INTERVAL`` per key set, so forged
``kid`` values cannot make the gateway hammer an issuer. Every fetch runs
under the issuer's failure memory (``breaker``); a ``jwks_uri`` found in
metadata is vetted like a configured one (``net``) before it is fetched.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

from mcp_gateway.conf import gateway_settings
from mcp_gateway.models import AuthorizationServer
from mcp_gateway.oauth import breaker, fetch, store
from mcp_gateway.oauth.config import validate_server_url

REFRESH_INTERVAL = 30
"""Seconds between forced refreshes of one key set."""


def find_key(server: AuthorizationServer, kid: str | None) -> dict[str, Any] | None:
    """The JWK for ``kid`` (or the only key when ``kid`` is absent).

    Raises:
        fetch.AuthUnavailable: the metadata or the key set cannot be fetched.
    """
    uri = jwks_uri(server)
    keys = store.get(_key("jwks", uri))
    key = _pick(keys if isinstance(keys, list) else _download(server, uri), kid)
    if key is None and _may_refresh(uri):
        key = _pick(_download(server, uri), kid)
    return key


def jwks_uri(server: AuthorizationServer) -> str:
    if server.jwks_uri:
        return server.jwks_uri
    cache_key = _key("meta", server.issuer)
    uri = store.get(cache_key)
    if uri is None:
        with breaker.guarded(server.issuer):
            uri = _discover(server.issuer)
        store.set(cache_key, uri, gateway_settings().JWKS_CACHE_SECONDS)
    return str(uri)


def metadata_urls(issuer: str) -> list[str]:
    """RFC 8414 (the well-known part before the path), then OIDC (after it)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def _discover(issuer: str) -> str:
    failure: fetch.AuthUnavailable | None = None
    for url in metadata_urls(issuer):
        try:
            metadata = fetch.get_json(url)
        except fetch.AuthUnavailable as exc:
            failure = exc
            continue
        uri = metadata.get("jwks_uri")
        if metadata.get("issuer") != issuer or not isinstance(uri, str):
            raise fetch.AuthUnavailable(f"{url}: metadata of another issuer")
        _check_url(uri)
        return uri
    raise fetch.AuthUnavailable(f"No metadata for {issuer}") from failure


def _check_url(uri: str) -> None:
    try:
        validate_server_url(uri)
    except ValidationError as exc:
        raise fetch.AuthUnavailable(f"Refused JWKS URI {uri}") from exc


def _download(server: AuthorizationServer, uri: str) -> list[dict[str, Any]]:
    with breaker.guarded(server.issuer):
        document = fetch.get_json(uri)
    found = document.get("keys", [])
    keys = [k for k in found if isinstance(k, dict)] if isinstance(found, list) else []
    store.set(_key("jwks", uri), keys, gateway_settings().JWKS_CACHE_SECONDS)
    store.set(_key("refresh", uri), 1, REFRESH_INTERVAL)
    return keys


def _may_refresh(uri: str) -> bool:
    """True at most once per interval and key set (``add`` is atomic)."""
    return store.add(_key("refresh", uri), 1, REFRESH_INTERVAL)


def _pick(keys: list[dict[str, Any]], kid: str | None) -> dict[str, Any] | None:
    signing = [k for k in keys if k.get("use", "sig") == "sig"]
    if kid is None:
        return signing[0] if len(signing) == 1 else None
    return next((k for k in signing if k.get("kid") == kid), None)


def _key(kind: str, value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]
    return f"mcp_gateway:oauth:{kind}:{digest}"
