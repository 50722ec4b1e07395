"""One call's notifications, from the engine (any thread) to the SSE stream.

It also carries the call's questions to the client (``dispatch.asking``).

The engine's context gets :meth:`Channel.progress` and :meth:`Channel.log` as
its sinks; they filter (progress only with a ``progressToken`` and only
increasing; log lines only at the levels the request allows) and hand the
notification to the event loop, which the response stream drains.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Mapping
from typing import Any, get_args

import mcp_types as types
from mcp.server.connection import allowed_log_levels
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_gateway.dispatch.era import version_header
from mcp_gateway.jsonrpc import progress_params

LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)
HANDSHAKE_LOG_LEVEL = "info"
"""The 2025 wires cannot remember ``logging/setLevel``: info and above."""
LOGGER_NAME = "engine"


def log_levels(params: Any, headers: Mapping[str, str]) -> frozenset[str]:
    """The log levels this request may receive.

    2026-07-28: only with the ``io.modelcontextprotocol/logLevel`` opt-in in
    ``_meta``, at that level and above. 2025 wires: info and above.
    """
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    version = version_header(headers)
    if version in MODERN_PROTOCOL_VERSIONS or types.PROTOCOL_VERSION_META_KEY in meta:
        return frozenset(allowed_log_levels(MODERN_PROTOCOL_VERSIONS[0], meta))
    return frozenset(LEVELS[LEVELS.index(HANDSHAKE_LOG_LEVEL) :])


class Channel:
    """Notifications of one call, queued for the response stream."""

    def __init__(
        self,
        params: Any,
        headers: Mapping[str, str],
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """``loop``: the stream's, when made outside it (the request thread)."""
        self._loop = asyncio.get_running_loop() if loop is None else loop
        self.used = False
        """Something was queued for the stream (from any thread)."""
        params = params if isinstance(params, Mapping) else None
        self._token = progress_token_from_params(params)
        self._levels = log_levels(params, headers)
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._wake = asyncio.Event()
        self._lock = threading.Lock()
        self._last_progress: float | None = None
        self._closed = False

    @property
    def wanted(self) -> bool:
        """Whether anything could be streamed for this request at all."""
        return self._token is not None or bool(self._levels)

    # -- Sinks: called by engines, from any thread ---------------------------

    def progress(
        self, progress: float, total: float | None, message: str | None
    ) -> None:
        """Queue ``notifications/progress``; a value that does not increase
        is dropped, as the protocol requires progress to increase."""
        if self._token is None:
            return
        with self._lock:
            if self._last_progress is not None and progress <= self._last_progress:
                return
            self._last_progress = progress
        params = progress_params(self._token, progress, total, message)
        self._put("notifications/progress", params)

    def log(self, level: str, message: str) -> None:
        """Queue ``notifications/message`` when the request allows the level."""
        level = level.lower() if level.lower() in LEVELS else HANDSHAKE_LOG_LEVEL
        if level in self._levels:
            params = {"level": level, "logger": LOGGER_NAME, "data": message}
            self._put("notifications/message", params)

    def request(self, message: dict[str, Any]) -> None:
        """Queue a server request (a question to the client) for the stream."""
        if not self._closed:
            self.used = True
            self._loop.call_soon_threadsafe(self._push, message)

    # -- The stream side: called on the event loop ----------------------------

    def drain(self) -> list[dict[str, Any]]:
        """Take every queued notification, oldest first."""
        taken = list(self._queue)
        self._queue.clear()
        return taken

    @property
    def pending(self) -> bool:
        return bool(self._queue)

    def wake(self, *_: object) -> None:
        self._wake.set()

    async def wait(self, seconds: float) -> bool:
        """Wait for a notification or a wake-up; False when ``seconds`` pass."""
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except TimeoutError:
            return False
        finally:
            self._wake.clear()
        return True

    def close(self) -> None:
        """Drop everything sent from now on: the stream is over."""
        self._closed = True
        self._queue.clear()

    def _put(self, method: str, params: dict[str, Any]) -> None:
        if self._closed:
            return
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        self.used = True
        try:
            self._loop.call_soon_threadsafe(self._push, message)
        except RuntimeError:  # the loop is gone: nobody listens any more
            self._closed = True

    def _push(self, message: dict[str, Any]) -> None:
        if not self._closed:
            self._queue.append(message)
            self._wake.set()
