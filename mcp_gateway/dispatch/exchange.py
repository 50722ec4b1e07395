"""A ``DispatchContext`` for one exchange with no back channel.

It satisfies ``mcp.shared.dispatcher.DispatchContext`` for a single request
answered by a single response: server-initiated requests are refused,
notifications go to an optional sink or nowhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.message import MessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import ProgressToken, RequestId

from mcp_gateway.jsonrpc import progress_params

NotificationSink = Callable[[str, Mapping[str, Any] | None], Awaitable[None]]


@dataclass
class SingleExchangeContext:
    """A ``DispatchContext`` for one request answered by one response."""

    transport: TransportContext
    request_id: RequestId
    message_metadata: MessageMetadata
    progress_token: ProgressToken | None = None
    sink: NotificationSink | None = None
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = field(default=False, init=False)

    async def send_raw_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
    ) -> None:
        if self.sink is not None:
            await self.sink(method, params)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        if self.progress_token is None:
            return
        params = progress_params(self.progress_token, progress, total, message)
        await self.notify("notifications/progress", params)
