"""Which endpoint view a process serves: sync under WSGI, async under ASGI."""

from __future__ import annotations

import asyncio

import pytest

from mcp_gateway import serving
from mcp_gateway.aviews import aendpoint
from mcp_gateway.views import endpoint


@pytest.fixture
def not_asgi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(serving._asgi, "entered", False)


def test_a_wsgi_process_serves_the_sync_view(not_asgi):
    assert _unwrapped() is endpoint  # observed (metrics)
    assert not asyncio.iscoroutinefunction(serving.endpoint_view())


def test_the_asgi_entry_point_selects_the_async_view(not_asgi):
    serving.announce_asgi()

    assert _unwrapped() is aendpoint
    assert asyncio.iscoroutinefunction(serving.endpoint_view())
    assert asyncio.iscoroutinefunction(aendpoint)


@pytest.mark.parametrize(("forced", "view"), [(True, aendpoint), (False, endpoint)])
def test_the_setting_forces_the_choice(not_asgi, settings, forced, view):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ASYNC_ENDPOINT": forced}

    assert _unwrapped() is view


def _unwrapped() -> object:
    """The view under the observing wrapper (metrics and traces)."""
    return getattr(serving.endpoint_view(), "__wrapped__", None)
