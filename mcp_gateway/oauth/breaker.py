"""Remember failing authorization servers, so a burst costs one fetch.

Each fetch from an issuer (its metadata, key set or introspection endpoint)
runs inside :func:`guarded`. A failure is remembered for
``OAUTH_FAILURE_CACHE_SECONDS`` in the shared cache (per process with a
per-process cache): meanwhile every request needing that issuer answers 503
at once, without a fetch. A success is remembered as long; while an
issuer's health is unknown (first use, or once either memory expired) one
request probes it and the others needing a fetch meanwhile answer 503 at
once, so a hung server ties up one worker per window, not all of them.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

from mcp_gateway.conf import gateway_settings
from mcp_gateway.oauth import store
from mcp_gateway.oauth.fetch import AuthUnavailable


@contextlib.contextmanager
def guarded(issuer: str) -> Iterator[None]:
    """Run one fetch for ``issuer`` unless it failed lately or is being probed.

    Raises:
        AuthUnavailable: the issuer failed within the window, another
            request is probing it, or the fetch failed.
    """
    settings = gateway_settings()
    window = settings.OAUTH_FAILURE_CACHE_SECONDS
    failed, healthy, probing = (_key(kind, issuer) for kind in ("down", "up", "probe"))
    if store.get(failed):
        raise AuthUnavailable(f"{issuer}: failed within the last {window:g} s")
    known_healthy = bool(store.get(healthy))
    if not known_healthy and not store.add(
        probing, 1, settings.JWKS_TIMEOUT_SECONDS + 1
    ):
        raise AuthUnavailable(f"{issuer}: another request is probing it")
    try:
        yield
    except AuthUnavailable:
        _remember_failure(failed, healthy, window)
        raise
    else:
        store.set(healthy, 1, window)
    finally:
        if not known_healthy:
            store.delete(probing)


def _remember_failure(failed: str, healthy: str, window: float) -> None:
    if window > 0:
        store.set(failed, 1, window)
    store.delete(healthy)


def _key(kind: str, issuer: str) -> str:
    digest = hashlib.sha256(issuer.encode("utf-8")).hexdigest()[:32]
    return f"mcp_gateway:oauth:{kind}:{digest}"
