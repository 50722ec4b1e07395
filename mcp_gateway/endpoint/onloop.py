"""Whether a request under ASGI can be answered on the event loop itself.

A warm request asks the database nothing but its audit row (the principal
cache knows the token, the catalog is kept), and the row can be written
from the loop (``audit.onloop``). Then the first hop's work (admission,
the answer of what needs no waiting, the response's finishing) runs on the
loop, and the request makes no thread hop at all: over HTTP a hop to a
request thread costs more CPU than the whole answer.

This module decides *before* anything is done, from what is already in
memory, so that a request it lets through does nothing that blocks and
nothing twice: any doubt sends the request to its thread as before. It is
let through when

- ``ASGI_LOOP_ANSWERS`` is on, the request came through the ASGI fast path
  (``endpoint.fastpath``: its response is finished by the view), and the
  audit table is on PostgreSQL through psycopg 3 (``audit.onloop.available``);
- the request signals have only Django's own receivers (a site's receiver
  may do database work, which needs the request's thread);
- the rate limits and quotas count in a local-memory cache (another cache
  is a network round trip);
- the first auth backend that takes a bearer token is ``ApiTokenBackend``
  (another backend may ask the network; Django's ``ModelBackend`` before it
  returns at once without a username), and it accepts this token from
  memory: its row kept for this tenant, no ``last_used_at`` due
  (``backends.accepts_from_memory``);
- the tenant's catalog is kept and no tool in it is restricted to groups
  (a restricted catalog reads the user's groups on every request);
- the request has no ``Origin`` (checked against the tenant's row), and
  its body, of a declared length, is one JSON-RPC request (a notification
  or a client's answer is relayed to a waiting call from a thread) that
  the token's scopes allow (a refusal's challenge reads the tenant's
  authorization servers).

Should something still need the database, Django refuses the work on the
loop (``SynchronousOnlyOperation``) and the view serves the request in its
thread from the start; its ``request_started`` is sent again there, before
its first database work.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import load_backend
from django.contrib.auth.backends import ModelBackend
from django.core import signals
from django.core.cache import caches, close_caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.handlers.base import reset_urlconf
from django.db import close_old_connections, reset_queries
from django.http import HttpRequest

from mcp_gateway import backends, catalog, jsonrpc
from mcp_gateway.audit import onloop
from mcp_gateway.backends import ApiTokenBackend
from mcp_gateway.conf import gateway_settings
from mcp_gateway.endpoint import access, admission, bearer, boundary, threads

_DJANGOS: frozenset[Any] = frozenset(
    {reset_queries, close_old_connections, close_caches, reset_urlconf}
)
"""Django's own receivers of the request signals: no I/O on the loop (the
loop's thread holds no database connection; the caches' ``close``)."""
_BEARER = {"bearer_token": "", "tenant": ""}


@dataclass(frozen=True)
class OnLoop:
    """A request the view may answer on the loop."""

    alias: str
    """The audit table's database alias, written from the loop."""
    message: jsonrpc.Message
    """The request's JSON-RPC message, read from its body."""


def admissible(request: HttpRequest, slug: str) -> OnLoop | None:
    """What the loop needs to answer ``request``, if it may be answered
    there, else ``None`` (it goes to its thread)."""
    if not gateway_settings().ASGI_LOOP_ANSWERS or not threads.finishing():
        return None
    alias = onloop.available()
    if alias is None or not _plain_signals() or not _local_limits():
        return None
    if "Origin" in request.headers:
        return None
    token = boundary.bearer_token(request)
    row = None if token is None else backends.accepts_from_memory(token, slug)
    if row is None or not _token_backend_first(request):
        return None
    kept = catalog.cached(row.tenant)
    if kept is None or kept.restricted:
        return None
    message = _request_in(request)
    if message is None or access.lacks_scope(
        message.payload, kept, frozenset(row.scopes)
    ):
        return None  # a refusal's challenge reads the tenant's servers
    return OnLoop(alias, message)


def _request_in(request: HttpRequest) -> jsonrpc.Message | None:
    """The body's JSON-RPC request; ``None`` for anything else (admission
    answers that in the request's thread, in its order of checks). A body
    of no declared length (chunked) is left to admission: read here, one
    over the limit would be spent before admission refuses it."""
    if not request.META.get("CONTENT_LENGTH"):
        return None
    body = boundary.read_body(request)
    if not isinstance(body, bytes):
        return None
    try:
        message = jsonrpc.parse(body)
    except jsonrpc.JsonRpcError:
        return None
    if message.kind != "request":
        return None
    admission.keep_message(request, message)
    return message


def _plain_signals() -> bool:
    known = _DJANGOS
    for signal in (signals.request_started, signals.request_finished):
        for receiver in _receivers(signal):
            if receiver not in known:
                return False
    return True


def _receivers(signal: Any) -> list[Any]:
    """Every receiver connected to the signal, whatever its sender."""
    found = []
    for entry in signal.receivers:
        receiver = entry[1]
        if isinstance(receiver, weakref.ReferenceType):
            receiver = receiver()
            if receiver is None:
                continue
        found.append(receiver)
    return found


def _local_limits() -> bool:
    cache = caches[gateway_settings().RATE_LIMIT_CACHE]
    return isinstance(cache, LocMemCache | DummyCache)


def _token_backend_first(request: HttpRequest) -> bool:
    for path in settings.AUTHENTICATION_BACKENDS:
        backend = load_backend(path)
        if isinstance(backend, ApiTokenBackend):
            return True
        if type(backend).authenticate is ModelBackend.authenticate:
            continue  # no username and password: it returns at once
        if bearer.takes(backend.authenticate, request, _BEARER):
            return False
    return False
