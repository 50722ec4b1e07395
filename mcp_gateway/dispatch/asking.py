"""Server requests on the 2025 wires: an engine's question, answered statelessly.

When an engine asks a question during a 2025-era ``tools/call`` answered as
an SSE stream, the worker sends its request on that stream
(``elicitation/create`` for a form, or in mode ``url`` on 2025-11-25;
``sampling/createMessage`` for the caller's model; ``roots/list``; a
round's questions one after another) under a server-issued, unguessable id
and waits, until the call's
deadline, for the client's answer. The client POSTs the answer (a JSON-RPC
response) to any worker of any host. The waiting worker notes the id in the
shared cache (``RATE_LIMIT_CACHE``) with its bus address, the tenant and the
principal (user and token); the worker that receives the answer checks the
answering tenant and principal against that entry, deletes it (one answer
per question: a replay finds nothing) and sends the answer through the
change bus (``bus.send``). The waiting worker checks again that it issued
the id, still waits for it, and for the same tenant and principal, and only
then hands the answer to the engine.

A stateless server never sees the capabilities the client declared at
``initialize``: it asks only when an engine needs the input, and an error
answer (method not found, say), no answer by the deadline, or a malformed
one is "input unavailable", the engine's ``INPUT_UNAVAILABLE`` tool error.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from django.core.cache import caches

from engines_app.context import Principal, Signal
from engines_app.interaction import Answer, Question
from mcp_gateway import bus
from mcp_gateway.conf import gateway_settings
from mcp_gateway.dispatch import interaction

logger = logging.getLogger("mcp_gateway")

KIND = "mcp_gateway.answer"
"""The ``kind`` of an answer on the bus (other messages are ignored)."""
CACHE_PREFIX = "mcpgw:asked:"
ID_PREFIX = "mcpgw-"
ASKING_VERSIONS = frozenset({"2025-06-18", "2025-11-25"})
"""The 2025 revisions that define ``elicitation/create``."""
_ID = re.compile(r"mcpgw-[A-Za-z0-9_-]{32}")
_NO_DEADLINE_SECONDS = 3600
_SLACK_SECONDS = 5
_LISTEN_SECONDS = 2.0
_LISTEN_STEP_SECONDS = 0.02
_POLL_SECONDS = 0.5
"""How often a wait looks at the call's signal (a 2025 cancel sets it)."""

Send = Callable[[dict[str, Any]], None]
"""Puts one JSON-RPC message on the call's response stream."""


@dataclass
class _Waiting:
    """A question of this process that an answer may resolve."""

    identity: tuple[int, str | None, str | None]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any] = field(init=False)

    def __post_init__(self) -> None:
        self.future = self.loop.create_future()


_waiting: dict[str, _Waiting] = {}
_lock = threading.Lock()
_subscribed: list[tuple[str, bus.Subscription]] = []


@dataclass(frozen=True)
class Asker:
    """Asks the client of one 2025-era call on the call's SSE stream."""

    tenant_id: int
    principal: Principal
    send: Send

    async def ask(self, request: Question, signal: Signal) -> Answer | None:
        """The client's answer to ``request``; ``None`` when it is unavailable."""
        remaining = signal.remaining()
        if signal.cancelled or (remaining is not None and remaining <= 0):
            return None
        request_id = ID_PREFIX + secrets.token_urlsafe(24)
        identity = (self.tenant_id, self.principal.user, self.principal.token)
        waiting = _Waiting(identity, asyncio.get_running_loop())
        try:
            _announce(request_id, waiting, remaining)
        except Exception:
            logger.warning("Could not note a question to the client.")
            _forget(request_id)
            return None
        try:
            await _listening(signal)
            if signal.cancelled:
                return None
            self.send(_question(request_id, request))
            answer = await _answer(waiting.future, signal)
        finally:
            _forget(request_id)
        return reply_of(answer, request)


def is_question_id(value: Any) -> TypeGuard[str]:
    """Whether ``value`` has the shape of an id this gateway issues."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def relay(tenant_id: int, principal: Principal, response: Mapping[str, Any]) -> bool:
    """Pass a client's answer to the worker waiting for it.

    True when it was sent; False when no question of this tenant and
    principal waits under its id (unknown, answered, expired or foreign).
    """
    request_id = response.get("id")
    if not is_question_id(request_id):
        return False
    try:
        key = CACHE_PREFIX + request_id
        held = _cache().get(key)
        identity = [tenant_id, principal.user, principal.token]
        if not isinstance(held, dict) or held.get("identity") != identity:
            return False
        _cache().delete(key)  # one answer per question
        result = response.get("result")
        message = {
            "kind": KIND,
            "id": request_id,
            "identity": identity,
            "result": result if isinstance(result, dict) else None,
        }
        bus.send(held["process"], message)
    except bus.PayloadTooLarge:
        logger.warning("An answer to a question was too large to relay.")
        return False
    except Exception:
        logger.warning("Could not relay an answer to a question.")
        return False
    return True


def waiting_count() -> int:
    """How many questions this process waits on (tests, bounded memory)."""
    return len(_waiting)


def reply_of(result: Any, request: Question) -> Answer | None:
    """The engine's answer from the client's result to ``request`` (an
    ``ElicitResult``, a ``CreateMessageResult``, a ``ListRootsResult``);
    ``None`` if it is not the one asked for."""
    if result is None:
        return None
    return interaction.answer_of(request.kind, result, request.state)


# -- This process's side ------------------------------------------------------------


def _question(request_id: str, request: Question) -> dict[str, Any]:
    """The JSON-RPC request asking ``request`` (a URL elicitation carries
    the ``elicitationId`` 2025-11-25 requires; calls ask it on no other)."""
    method, params = interaction.wire_params(request, "2025-11-25")
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


async def _listening(signal: Signal) -> None:
    """Give a bus that is just starting a moment to listen (an answer sent
    before it listens would be lost: delivery is at most once)."""
    waited = 0.0
    while not bus.healthy() and waited < _LISTEN_SECONDS and not signal.cancelled:
        await asyncio.sleep(_LISTEN_STEP_SECONDS)
        waited += _LISTEN_STEP_SECONDS


async def _answer(future: asyncio.Future[Any], signal: Signal) -> Any:
    """The relayed result, or ``None`` at the deadline or a cancel."""
    while not signal.cancelled:
        remaining = signal.remaining()
        seconds = _POLL_SECONDS if remaining is None else min(remaining, _POLL_SECONDS)
        done, _ = await asyncio.wait({future}, timeout=seconds)
        if done:
            return future.result()
    return None


def _announce(request_id: str, waiting: _Waiting, remaining: float | None) -> None:
    _subscribe()
    with _lock:
        _waiting[request_id] = waiting
    entry = {"process": bus.process_id(), "identity": list(waiting.identity)}
    timeout = _NO_DEADLINE_SECONDS if remaining is None else math.ceil(remaining)
    _cache().set(CACHE_PREFIX + request_id, entry, timeout + _SLACK_SECONDS)


def _forget(request_id: str) -> None:
    with _lock:
        _waiting.pop(request_id, None)
    try:
        _cache().delete(CACHE_PREFIX + request_id)
    except Exception:
        logger.warning("Could not forget a question; it expires.")


def _subscribe() -> None:
    """Listen for answers once per bus (a new bus has a new process id)."""
    address = bus.process_id()
    with _lock:
        if _subscribed and _subscribed[0][0] == address and _subscribed[0][1].active:
            return
        _subscribed[:] = [(address, bus.subscribe(bus.Message, _on_message))]


def _on_message(event: bus.Message | bus.Resync) -> None:
    """An answer to a question this process waits on resolves it, once."""
    if not isinstance(event, bus.Message) or event.data.get("kind") != KIND:
        return
    request_id = event.data.get("id")
    identity = event.data.get("identity")
    if not is_question_id(request_id):
        return
    with _lock:
        waiting = _waiting.get(request_id)
        if waiting is None or list(waiting.identity) != identity:
            return  # answered, given up, never ours, or another caller's
        del _waiting[request_id]
    try:
        waiting.loop.call_soon_threadsafe(
            _resolve, waiting.future, event.data.get("result")
        )
    except RuntimeError:  # the loop is gone: nobody waits any more
        return


def _resolve(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _cache() -> Any:
    return caches[gateway_settings().RATE_LIMIT_CACHE]
