"""The endpoint's URL pattern picks the view per request: async on a loop."""

from __future__ import annotations

import asyncio

import pytest
from django.urls import resolve

from mcp_gateway.endpoint import serving
from mcp_gateway.endpoint.aviews import aendpoint
from mcp_gateway.endpoint.views import endpoint


def _view(match: object) -> object:
    """The view under the observing wrapper (metrics and traces)."""
    return getattr(match, "__wrapped__", None)


def test_a_request_resolved_off_a_loop_gets_the_sync_view():
    match = resolve("/t/acme/mcp")

    assert _view(match.func) is endpoint
    assert not asyncio.iscoroutinefunction(match.func)


def test_a_request_resolved_on_a_loop_gets_the_async_view():
    """Django's ASGI handler resolves on its loop, whatever wraps the app."""

    async def resolved() -> object:
        return resolve("/t/acme/mcp").func

    func = asyncio.run(resolved())

    assert _view(func) is aendpoint
    assert asyncio.iscoroutinefunction(func)


@pytest.mark.parametrize(("forced", "view"), [(True, aendpoint), (False, endpoint)])
def test_the_setting_forces_the_choice_per_request(settings, forced, view):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ASYNC_ENDPOINT": forced}

    async def resolved() -> object:
        return resolve("/t/acme/mcp").func

    assert _view(resolve("/t/acme/mcp").func) is view
    assert _view(asyncio.run(resolved())) is view


def test_both_views_keep_the_one_url_name():
    pattern = serving.endpoint_pattern("<slug:slug>/mcp")

    assert pattern.name == pattern.async_pattern.name == "endpoint"
    match = pattern.resolve("acme/mcp")
    assert match is not None
    assert match.kwargs == {"slug": "acme"}
