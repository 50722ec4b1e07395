"""The endpoint's URL pattern picks the view per request: async on a loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.conf.urls.i18n import i18n_patterns
from django.core.handlers.asgi import ASGIHandler
from django.urls import (
    URLResolver,
    clear_url_caches,
    get_resolver,
    include,
    path,
    register_converter,
    resolve,
)
from django.utils import translation
from django.utils.module_loading import import_string

from mcp_gateway.endpoint import serving
from mcp_gateway.endpoint.aviews import aendpoint
from mcp_gateway.endpoint.fastpath import REPLAYED, FastPath
from mcp_gateway.endpoint.views import endpoint
from mcp_gateway.endpoint.wsgifast import MountPath


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


# -- The endpoint's match, kept per URLconf -----------------------------------


class TenantCode:
    """A site's own converter (it could look the code up): asked each time."""

    regex = "[a-z]+"
    asked: list[str] = []

    def to_python(self, value: str) -> str:
        self.asked.append(value)
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(TenantCode, "mcpgw_test_code")

# A site that mounts the gateway under a converter of its own, and under a
# language prefix.
urlpatterns = [
    path("x/<mcpgw_test_code:site>/", include("mcp_gateway.urls")),
    *i18n_patterns(path("lang/", include("mcp_gateway.urls"))),
]


@pytest.fixture(autouse=True)
def _fresh_urlconf() -> None:
    """Each test starts with nothing kept (Django's resolvers made anew)."""
    clear_url_caches()


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the root URLconf walked its patterns for."""
    walked: list[str] = []
    original = URLResolver.resolve

    def resolve(self: URLResolver, path: str) -> Any:
        if self is get_resolver():
            walked.append(path)
        return original(self, path)

    monkeypatch.setattr(URLResolver, "resolve", resolve)
    return walked


def test_an_endpoint_path_is_resolved_once(resolved: list[str]):
    first = serving.endpoint_match("/t/acme/mcp")
    again = serving.endpoint_match("/t/acme/mcp")

    assert resolved == ["/t/acme/mcp"]
    assert again is first
    expected = resolve("/t/acme/mcp")
    assert first is not None
    assert (first.func, first.args, first.kwargs) == (
        expected.func,
        expected.args,
        expected.kwargs,
    )
    assert (first.route, first.view_name) == (expected.route, expected.view_name)


def test_a_path_of_another_view_is_no_match_and_not_kept(resolved: list[str]):
    assert serving.endpoint_match("/admin/login/") is None
    assert serving.endpoint_match("/admin/login/") is None
    assert serving.endpoint_match("/nowhere/mcp") is None

    assert resolved == ["/admin/login/", "/admin/login/", "/nowhere/mcp"]


def test_the_kind_of_view_is_part_of_what_is_kept(settings: Any):
    sync = serving.endpoint_match("/t/acme/mcp")
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "ASYNC_ENDPOINT": True}
    forced = serving.endpoint_match("/t/acme/mcp")

    assert sync is not None
    assert forced is not None
    assert _view(sync.func) is endpoint
    assert _view(forced.func) is aendpoint


def test_a_sites_own_converter_is_asked_on_every_request(
    settings: Any, resolved: list[str]
):
    settings.ROOT_URLCONF = __name__
    TenantCode.asked.clear()

    first = serving.endpoint_match("/x/north/acme/mcp")
    again = serving.endpoint_match("/x/north/acme/mcp")

    assert first is not None
    assert again is not None
    assert again.kwargs == {"site": "north", "slug": "acme"}
    assert TenantCode.asked == ["north", "north"]
    assert len(resolved) == 2


def test_another_urlconf_starts_afresh(settings: Any):
    assert serving.endpoint_match("/t/acme/mcp") is not None

    settings.ROOT_URLCONF = __name__

    assert serving.endpoint_match("/t/acme/mcp") is None


def test_the_kept_matches_start_over_past_their_bound(
    monkeypatch: pytest.MonkeyPatch, resolved: list[str]
):
    monkeypatch.setattr(serving, "KEPT_MATCHES", 2)
    paths = ["/t/one/mcp", "/t/two/mcp", "/t/three/mcp"]
    for each in paths:
        serving.endpoint_match(each)

    assert len(serving._matches[get_resolver()]) == 1  # the third, afresh
    serving.endpoint_match("/t/three/mcp")
    serving.endpoint_match("/t/one/mcp")
    assert resolved == [*paths, "/t/one/mcp"]


def test_a_long_path_is_resolved_but_not_kept(resolved: list[str]):
    long = "/t/" + "a" * serving.KEPT_PATH_LENGTH + "/mcp"

    assert serving.endpoint_match(long) is not None
    assert serving.endpoint_match(long) is not None
    assert resolved == [long, long]


def test_the_active_language_is_part_of_what_is_kept(settings: Any):
    settings.ROOT_URLCONF = __name__
    settings.LANGUAGES = [("en", "English"), ("de", "German")]

    with translation.override("en"):
        english = serving.endpoint_match("/en/lang/acme/mcp")
    with translation.override("de"):
        stale = serving.endpoint_match("/en/lang/acme/mcp")
        german = serving.endpoint_match("/de/lang/acme/mcp")

    assert english is not None
    assert stale is None
    assert german is not None


def test_no_replayed_middleware_could_change_a_shared_match():
    """The kept match's ``kwargs`` go to every ``process_view`` unpacked
    only by the view: none of the fast paths' middleware may have one."""
    for dotted in REPLAYED:
        assert not hasattr(import_string(dotted), "process_view"), dotted


def test_both_fast_paths_resolve_a_mount_once(resolved: list[str]):
    environ = {"PATH_INFO": "/t/acme/mcp", "SCRIPT_NAME": ""}
    mount = MountPath()
    assert mount.handler_for(dict(environ)) is not None
    assert mount.handler_for(dict(environ)) is not None

    scope = {"type": "http", "path": "/t/acme/mcp", "root_path": ""}

    async def matched() -> object:
        return FastPath(ASGIHandler()).match(scope)

    assert asyncio.run(matched()) is not None
    assert asyncio.run(matched()) is not None
    # One walk for the sync view, one for the async view.
    assert resolved == ["/t/acme/mcp", "/t/acme/mcp"]
