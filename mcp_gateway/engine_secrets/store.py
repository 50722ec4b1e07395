"""Engine secrets per process: read once, kept until the bus says otherwise.

A warm worker answers ``for_engine`` from memory, with no query. Every
change publishes ``bus.SecretsChanged`` when it commits; each process drops
what it keeps for that tenant and engine (everything on ``Resync``), and
keeps nothing longer than ``SECRETS_CACHE_SECONDS`` in case the bus is down.

The first read of a process checks that its keys open every stored secret
(``verify_keys``); until they do, every read raises ``SecretKeyError``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType

from django.db import DatabaseError, connection
from django.views.decorators.debug import sensitive_variables

from mcp_gateway import bus
from mcp_gateway.conf import gateway_settings
from mcp_gateway.engine_secrets.keys import SETTING, SecretKeyError, keyring
from mcp_gateway.engine_secrets.models import EngineSecret

logger = logging.getLogger("mcp_gateway")

Key = tuple[int, str]
_lock = threading.Lock()
_kept: dict[Key, tuple[Mapping[str, str], float]] = {}
_generation = 0
_subscription: bus.Subscription | None = None
_verified = False


def for_engine(tenant_id: int, engine_id: str) -> Mapping[str, str]:
    """Name → value of the secrets of ``engine_id`` at ``tenant_id``.

    Raises:
        SecretKeyError: the keys do not open the stored secrets.
    """
    key = (tenant_id, engine_id)
    kept = _kept.get(key)
    if kept is not None and time.monotonic() < kept[1]:
        return kept[0]
    return _load(key)


def cached(tenant_id: int, engine_id: str) -> Mapping[str, str] | None:
    """What this process keeps, or ``None``; never reads the database."""
    kept = _kept.get((tenant_id, engine_id))
    return kept[0] if kept is not None and time.monotonic() < kept[1] else None


@sensitive_variables("values")
def _load(key: Key) -> Mapping[str, str]:
    _listen()
    with _lock:
        generation = _generation
    if not _verified:
        verify_keys()
    rows = EngineSecret.objects.filter(tenant_id=key[0], engine_id=key[1])
    pairs = list(rows.values_list("name", "ciphertext"))
    ring = keyring()
    if ring is None and pairs:
        raise SecretKeyError(f"{SETTING} is empty but secrets are stored.")
    values = MappingProxyType({n: ring.decrypt(c) for n, c in pairs} if ring else {})
    expires = time.monotonic() + gateway_settings().SECRETS_CACHE_SECONDS
    with _lock:
        if generation == _generation:  # nothing changed while reading
            _kept[key] = (values, expires)
    return values


def verify_keys() -> None:
    """Check that the configured keys open every stored secret (one query).

    Raises:
        SecretKeyError: a key is malformed, or secrets are stored under a
            key that is not configured (named by its fingerprint only).
    """
    global _verified
    ring = keyring()
    used = set(EngineSecret.objects.values_list("key_id", flat=True).distinct())
    unknown = used - set(ring.ids if ring is not None else ())
    if unknown:
        raise SecretKeyError(
            f"Engine secrets are stored under {len(unknown)} key(s) that "
            f"{SETTING} (env MCP_SECRET_KEYS) does not hold (key id "
            f"{', '.join(sorted(unknown))}); add the key back, newest first."
        )
    _verified = True


def startup_check() -> None:
    """Refuse to start with keys that cannot open the stored secrets.

    For WSGI/ASGI entry points, where system checks do not run. A database
    that is not reachable (or not migrated) yet defers the check to the
    first read. Under a running event loop (uvicorn imports the application
    inside it) the query runs in a thread of its own.

    Raises:
        SecretKeyError: as ``verify_keys``.
    """
    keyring()  # a malformed key refuses at once, database or not
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        _check_stored()
        return
    with ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(_check_stored).result()


def _check_stored() -> None:
    try:
        verify_keys()
    except DatabaseError:
        logger.info("Engine secret keys will be checked at first use.")
    finally:
        # A server may fork after this (gunicorn --preload): no connection
        # is to be shared with the workers.
        if not connection.in_atomic_block:
            connection.close()


def drop(tenant_id: int, engine_id: str) -> None:
    global _generation
    with _lock:
        _generation += 1
        _kept.pop((tenant_id, engine_id), None)


def clear() -> None:
    """Forget every kept secret (tests; ``Resync``; a key change)."""
    global _generation, _verified
    with _lock:
        _generation += 1
        _kept.clear()
        _verified = False


def _listen() -> None:
    global _subscription
    if _subscription is not None and _subscription.active:
        return
    with _lock:
        if _subscription is None or not _subscription.active:
            _subscription = bus.subscribe(bus.SecretsChanged, _on_event)


def _on_event(event: bus.SecretsChanged | bus.Resync) -> None:
    if isinstance(event, bus.SecretsChanged):
        drop(event.tenant, event.engine)
    else:
        clear()
