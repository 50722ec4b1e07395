"""The WSGI fast path: what only it does (the async view, forced, is left to
the site's chain). What both servers' fast paths keep of the chain is
tested in test_mount_fast_paths.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.mcp_gateway.endpoint.servers import wsgi_post, wsgi_taken

# The handler closes its connections after each request, as a server's does.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the mount's own handler served."""
    return wsgi_taken(monkeypatch)


def test_the_async_view_forced_under_wsgi_goes_through_the_chain(
    token: str, settings: Any, taken: list[str]
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ASYNC_ENDPOINT": True}

    status, _, _ = wsgi_post(token)

    assert taken == []
    assert status == 200
