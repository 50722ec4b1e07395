"""The ASGI fast path: what only it does (the request's hops to its thread,
``request_started`` in the first of them). What both servers' fast paths
keep of the chain is tested in test_mount_fast_paths.py."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core import signals

from mcp_gateway.endpoint import aviews
from tests.mcp_gateway.endpoint.servers import asgi_post, asgi_taken

pytestmark = pytest.mark.django_db(transaction=True)  # requests use their threads


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the fast path served."""
    return asgi_taken(monkeypatch)


def test_request_started_is_sent_in_the_first_hop_before_admission(
    token: str, taken: list[str], monkeypatch: pytest.MonkeyPatch
):
    seen: list[tuple[str, int]] = []
    admit = aviews.admit  # type: ignore[attr-defined]

    def started(**kwargs: Any) -> None:
        seen.append(("started", threading.get_ident()))

    def admitting(*args: Any) -> Any:
        seen.append(("admit", threading.get_ident()))
        return admit(*args)

    monkeypatch.setattr(aviews, "admit", admitting)
    signals.request_started.connect(started)
    try:
        status, _, _ = asgi_post(token)
    finally:
        signals.request_started.disconnect(started)

    assert status == 200
    assert [what for what, _ in seen] == ["started", "admit"]
    assert seen[0][1] == seen[1][1] != threading.get_ident()


def test_a_request_hops_to_its_thread_twice(
    token: str, taken: list[str], monkeypatch: pytest.MonkeyPatch
):
    """The admission, then the response's close (``request_finished``):
    ``request_started`` rides on the first, giving the thread back on none."""
    hops: list[str] = []
    submit = ThreadPoolExecutor.submit

    def counted(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(self._thread_name_prefix)
        return submit(self, fn, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", counted)

    status, _, _ = asgi_post(token)

    assert taken == ["/t/acme/mcp"]
    assert status == 200
    assert hops.count("mcp-request") == 2
