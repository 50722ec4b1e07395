"""Redis pub/sub: published when the caller's transaction commits."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from mcp_gateway.bus.transport import (
    PING_SECONDS,
    TICK_SECONDS,
    Counters,
    Receiver,
    after_commit,
)

logger = logging.getLogger("mcp_gateway.bus")
CLIENT_NAME = "mcpgw-bus-{pid}"
"""How the listening connection names itself in ``CLIENT LIST``."""
_DJANGO_ONLY = ("serializer", "pool_class", "parser_class")


class RedisTransport:
    """Pub/sub on the server of a Redis cache.

    Redis pub/sub ignores database numbers, so channel names carry the
    cache's database number and key prefix: deployments that share a
    Redis server but not a cache never hear each other.
    """

    name = "redis"

    def __init__(
        self, url: str, options: Mapping[str, Any], key_prefix: str, counters: Counters
    ) -> None:
        self._url = url
        self._options = {
            "socket_connect_timeout": 5,
            "socket_timeout": 5,
            **{k: v for k, v in options.items() if k not in _DJANGO_ONLY},
        }
        self._counters = counters
        self._publisher: redis.Redis | None = None
        self._lock = threading.Lock()
        db = redis.ConnectionPool.from_url(url, **self._options).connection_kwargs
        self._prefix = f"mcpgw:{db.get('db', 0)}:{key_prefix}:"

    def channel(self, topic: str) -> str:
        return f"{self._prefix}{topic}"

    def publish(self, channel: str, payload: str, *, using: str) -> None:
        after_commit(lambda: self._send(channel, payload), using)

    def _send(self, channel: str, payload: str) -> None:
        try:
            self._client().publish(channel, payload)
        except redis.RedisError as exc:  # committed already: log, never raise
            self._counters.add("failures")
            logger.warning("The change bus could not publish to Redis: %s", exc)
        else:
            self._counters.add("published")

    def _client(self) -> redis.Redis:
        with self._lock:
            if self._publisher is None:
                self._publisher = redis.Redis.from_url(self._url, **self._options)
            return self._publisher

    def listen(
        self, channels: Sequence[str], receiver: Receiver, stop: threading.Event
    ) -> None:
        # No retries inside redis-py: a lost connection must surface here, so
        # the bus reconnects itself and tells subscribers to resync.
        client = redis.Redis.from_url(
            self._url,
            **{
                **self._options,
                "client_name": CLIENT_NAME.format(pid=os.getpid()),
                "health_check_interval": PING_SECONDS,
                "retry": Retry(NoBackoff(), 0),
            },
        )
        pubsub = client.pubsub()  # type: ignore[no-untyped-call]
        try:
            pubsub.subscribe(*channels)
            _confirmed(pubsub, len(channels), stop)
            receiver.listening()
            while not stop.is_set():
                message = pubsub.get_message(timeout=TICK_SECONDS)
                if message is not None and message["type"] == "message":
                    receiver.received(
                        message["channel"].decode(), message["data"].decode()
                    )
        finally:
            pubsub.close()
            client.close()

    def wake(self) -> None:
        """The loop polls its stop flag every ``TICK_SECONDS``."""

    def close(self) -> None:
        with self._lock:
            if self._publisher is not None:
                self._publisher.close()
                self._publisher.connection_pool.disconnect()
                self._publisher = None


def _confirmed(pubsub: Any, expected: int, stop: threading.Event) -> None:
    """Wait for the server to confirm every SUBSCRIBE.

    Raises:
        redis.ConnectionError: no confirmation within ``PING_SECONDS``.
    """
    confirmed = 0
    deadline = time.monotonic() + PING_SECONDS
    while confirmed < expected and not stop.is_set():
        if time.monotonic() > deadline:
            raise redis.ConnectionError("Redis did not confirm SUBSCRIBE")
        message = pubsub.get_message(timeout=TICK_SECONDS)
        if message is not None and message["type"] == "subscribe":
            confirmed += 1
