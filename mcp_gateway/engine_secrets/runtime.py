"""Secrets at call time: hand an engine its own, keep them out of answers.

``provide`` gives the engine's context exactly the secrets it declares, of
its own tenant, or refuses the call naming a missing one. ``scrubbed``
replaces any of those values in the result the caller gets (text, the
structured content, error messages) with ``[secret]``, and while the call
runs the gateway's own log lines are scrubbed the same way.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import DatabaseError
from pydantic import BaseModel

from engines_app.context import EngineContext
from engines_app.engine import required_secrets
from mcp_gateway.engine_secrets import store
from mcp_gateway.engine_secrets.keys import SecretKeyError
from mcp_gateway.runtime.adapter import tool_error

logger = logging.getLogger("mcp_gateway")

MASK = "[secret]"
R = TypeVar("R", bound=BaseModel)
_WITHHELD = {
    "content": [
        {
            "type": "text",
            "text": '{"code":"EXECUTION_FAILED","message":"Tool execution failed."}',
        }
    ],
    "isError": True,
}
_active: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "mcp_gateway_active_secrets", default=()
)


class SecretsRefused(Exception):
    """The call cannot start: a secret is missing, or the store is shut."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def provide(engine: Any, context: EngineContext) -> EngineContext:
    """``context`` with the engine's secrets; unchanged for an engine that
    declares none. No query on a warm worker.

    Raises:
        SecretsRefused: a declared secret is not set, or the keys are wrong.
    """
    names = required_secrets(engine)
    if not names:
        return context
    tenant_id, stored = _cached(engine, context)
    if stored is None:
        stored = _read(tenant_id, engine.id)
    return _with(names, stored, context)


async def aprovide(engine: Any, context: EngineContext) -> EngineContext:
    """``provide`` from async code: a cold read runs in a thread."""
    names = required_secrets(engine)
    if not names:
        return context
    tenant_id, stored = _cached(engine, context)
    if stored is None:
        stored = await sync_to_async(_read)(tenant_id, engine.id)
    return _with(names, stored, context)


def call(
    engine: Any, context: EngineContext, execute: Callable[[EngineContext], R]
) -> R | types.CallToolResult:
    """``execute(context)`` with the engine's secrets in ``context``, scrubbed
    from the result and from the gateway's log lines; a refusal (a missing
    secret, unreadable keys) is the tool error. An engine that declares no
    secret runs as it is."""
    if not required_secrets(engine):
        return execute(context)
    try:
        context = provide(engine, context)
    except SecretsRefused as exc:
        return tool_error(exc.code, exc.message)
    with scrubbing(context):
        result = execute(context)
    return scrubbed(context, result)


async def acall(
    engine: Any,
    context: EngineContext,
    execute: Callable[[EngineContext], Awaitable[R]],
) -> R | types.CallToolResult:
    """``call`` from async code."""
    if not required_secrets(engine):
        return await execute(context)
    try:
        context = await aprovide(engine, context)
    except SecretsRefused as exc:
        return tool_error(exc.code, exc.message)
    with scrubbing(context):
        result = await execute(context)
    return scrubbed(context, result)


def _cached(
    engine: Any, context: EngineContext
) -> tuple[int | None, Mapping[str, str] | None]:
    tenant_id = context.principal.tenant_id
    if tenant_id is None:
        return None, None
    return tenant_id, store.cached(tenant_id, engine.id)


def _read(tenant_id: int | None, engine_id: str) -> Mapping[str, str]:
    if tenant_id is None:
        return {}
    try:
        return store.for_engine(tenant_id, engine_id)
    except SecretKeyError as exc:
        logger.error("Engine secrets unavailable: %s", exc)
        raise _unavailable() from None
    except DatabaseError:
        logger.exception("Engine secrets could not be read")
        raise _unavailable() from None


def _unavailable() -> SecretsRefused:
    return SecretsRefused(
        "SECRETS_UNAVAILABLE",
        "This tool's secrets cannot be read now; the operator is told why.",
    )


def _with(
    names: tuple[str, ...], stored: Mapping[str, str], context: EngineContext
) -> EngineContext:
    lacking = [name for name in names if name not in stored]
    if lacking:
        raise SecretsRefused(
            "MISSING_SECRET",
            f"This tool needs the secret {lacking[0]!r}, which is not set for "
            "this tenant; ask the operator to set it.",
        )
    return dataclasses.replace(context, secrets={n: stored[n] for n in names})


@contextlib.contextmanager
def scrubbing(context: EngineContext) -> Iterator[None]:
    """Scrub the context's secrets from the gateway's log lines meanwhile."""
    values = tuple(v for v in context.secrets.values() if v)
    if not values:
        yield
        return
    token = _active.set(values)
    try:
        yield
    finally:
        _active.reset(token)


def scrubbed(context: EngineContext, result: R) -> R:
    """``result`` (a ``CallToolResult``) without any of the call's secrets."""
    values = [v for v in context.secrets.values() if v]
    if not values:
        return result
    dumped = result.model_dump(by_alias=True, exclude_none=True)
    clean = _scrub(dumped, values)
    if clean == dumped:
        return result
    try:
        return type(result).model_validate(clean)
    except ValueError:  # pydantic's ValidationError: never send the original
        logger.error("A result held a secret and could not be scrubbed")
        return type(result).model_validate(_WITHHELD)


def scrub_text(text: str, values: list[str] | tuple[str, ...]) -> str:
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


def _scrub(value: Any, values: list[str]) -> Any:
    if isinstance(value, str):
        return scrub_text(value, values)
    if isinstance(value, Mapping):
        return {k: _scrub(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(item, values) for item in value]
    return value


class ScrubSecrets(logging.Filter):
    """Scrub the running call's secrets from a gateway log line, traceback
    included (installed on the ``mcp_gateway`` loggers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        values = _active.get()
        if not values:
            return True
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        record.msg, record.args = scrub_text(text, values), ()
        record.exc_info, record.exc_text = None, None
        return True


def install_log_filter() -> None:
    for name in ("mcp_gateway", "mcp_gateway.engines"):
        target = logging.getLogger(name)
        if not any(isinstance(f, ScrubSecrets) for f in target.filters):
            target.addFilter(ScrubSecrets())
