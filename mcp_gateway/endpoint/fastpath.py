"""The MCP mount under ASGI without Django's middleware chain.

Under ASGI every hook of a ``MiddlewareMixin`` middleware runs through
``sync_to_async``: the reference project's seven middleware cost a request
13 thread hops, more CPU than the gateway's own answer. None of them does
anything for the MCP endpoint but set a few response headers: the endpoint
authenticates by bearer token alone (no session, no cookie, CSRF-exempt)
and reads no message.

So :class:`FastPath` serves a request whose path the site's own URLconf
resolves to the endpoint's async view (any prefix the site mounts it
under), the way Django's ``ASGIHandler`` does, with its own request class,
body reading, ``request_started`` / ``request_finished`` signals (the
database connections are closed or handed back to the pool as usual),
cancellation of the view or its stream when the client goes away, and its
response sending, but with the middleware replaced:

- ``SecurityMiddleware``, ``CommonMiddleware`` and
  ``XFrameOptionsMiddleware`` run their hooks inline, on the event loop
  (they only read the request and settings and set headers: HSTS,
  ``X-Content-Type-Options``, ``Referrer-Policy``,
  ``Cross-Origin-Opener-Policy``, ``X-Frame-Options``, ``Content-Length``;
  the SSL and ``www`` redirects, ``DISALLOWED_USER_AGENTS``, the Host check);
- ``SessionMiddleware``, ``AuthenticationMiddleware``,
  ``CsrfViewMiddleware`` and ``MessageMiddleware`` are skipped: they have
  nothing to do on the mount (no ``request.session`` / ``request.user``
  there);
- any other middleware in ``MIDDLEWARE`` turns the fast path off: the
  mount's requests then go through Django's handler and the whole chain.

``MCP_GATEWAY["ASGI_FAST_PATH"] = False`` (env ``MCP_ASGI_FAST_PATH``)
turns it off too. Exceptions become responses as Django's handler makes
them (``response_for_exception``: the site's 400/403/500 views, no
traceback unless ``DEBUG``), and 4xx/5xx answers are logged to
``django.request`` as it logs them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest, HttpResponseBase
from django.urls import set_script_prefix, set_urlconf
from django.urls.resolvers import ResolverMatch
from django.utils.log import log_response
from django.utils.module_loading import import_string

from mcp_gateway.conf import gateway_settings
from mcp_gateway.endpoint.serving import endpoint_match, is_async_endpoint
from mcp_gateway.endpoint.threads import (
    Finisher,
    defer_request_started,
    finish_in_hop,
)

logger = logging.getLogger("mcp_gateway")

Scope = dict[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

REPLAYED = (
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
)
"""Middleware whose hooks run inline on the mount: headers and redirects,
no I/O, no session, no user."""

SKIPPED = (
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
)
"""Middleware with nothing to do on the mount (bearer tokens only, the view
is CSRF-exempt, no session or user is read there)."""


def _never(request: HttpRequest) -> HttpResponseBase:  # pragma: no cover
    raise AssertionError("the fast path calls the hooks itself")


class FastPath:
    """Serves the endpoint's requests for one of Django's ASGI handlers."""

    def __init__(self, handler: ASGIHandler) -> None:
        self.handler = handler
        self._plan_for: object = None
        self._plan: Sequence[Any] | None = None

    def middleware(self) -> Sequence[Any] | None:
        """The replayed middleware's (request, response) hooks, in order, or
        ``None``: no fast path."""
        configured = settings.MIDDLEWARE
        if configured is not self._plan_for:  # a test's override_settings
            self._plan_for, self._plan = configured, _plan(configured)
        return self._plan

    def match(self, scope: Scope) -> tuple[ResolverMatch, Sequence[Any]] | None:
        """The endpoint's match for this request, if the fast path serves it."""
        if not gateway_settings().ASGI_FAST_PATH:
            return None
        plan = self.middleware()
        if plan is None:
            return None
        prefix = get_script_prefix(scope)
        path = scope["path"]
        path_info = path.removeprefix(prefix) if prefix else path
        match = endpoint_match(path_info)
        if match is None or not is_async_endpoint(match.func):
            return None
        return match, plan

    async def serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        match: ResolverMatch,
        plan: Sequence[Any],
    ) -> None:
        """Django's ``ASGIHandler.handle``, the middleware chain replaced."""
        handler = self.handler
        try:
            body_file = await handler.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        request, error_response = handler.create_request(scope, body_file)
        if request is None:
            await signals.request_started.asend(sender=handler.__class__, scope=scope)
            assert error_response is not None  # noqa: S101 - Django's contract
            body_file.close()
            await handler.send_response(error_response, send)
            await sync_to_async(error_response.close)()
            return
        # A POST's request_started is sent by the view's first hop (its
        # admission, in the request's thread), not in a hop of its own; if
        # the view makes none, it is sent once the view is done.
        # The tasks take what is owed with the context they copy; the next
        # request in this context owes nothing.
        # A response the view makes in that hop is finished there too (the
        # response hooks, close(): request_finished); it is sent as it is.
        finish = functools.partial(self._finish, request, plan)
        close = functools.partial(self._close, request)
        with (
            defer_request_started(handler.__class__, scope) as started,
            finish_in_hop(finish, close) as finisher,
        ):
            if scope["method"] != "POST":  # a stream's admission runs elsewhere
                await started.asend()

            async def process_request() -> HttpResponseBase:
                try:
                    response = await self._respond(request, match, plan, finisher)
                finally:
                    await started.asend()
                # The client went away while the answer was sent: nothing to do.
                with contextlib.suppress(asyncio.CancelledError):
                    await _send_response(handler, response, send)
                return response

            tasks = [
                asyncio.create_task(handler.listen_for_disconnect(receive)),
                asyncio.create_task(process_request()),
            ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass  # the client's disconnect
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()  # the view (or its stream) sees the cancel
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            response = cast(HttpResponseBase, tasks[1].result())
        except asyncio.CancelledError:
            await started.asend()
            if finisher.claim():  # else the view's hop finished it
                await signals.request_finished.asend(sender=handler.__class__)
        else:
            if response is not finisher.finished:
                await sync_to_async(response.close)()
        body_file.close()
        if finisher.error is not None:  # closing in the hop failed
            raise finisher.error  # after the answer, as Django raises it

    async def _respond(
        self,
        request: HttpRequest,
        match: ResolverMatch,
        plan: Sequence[Any],
        finisher: Finisher,
    ) -> HttpResponseBase:
        """The middleware's hooks around the view, as the chain runs them
        (in the view's hop, for a response it finished there)."""
        set_urlconf(settings.ROOT_URLCONF)
        response: Any = None
        reached = len(plan)
        for index, (process_request, _) in enumerate(plan):
            if process_request is None:
                continue
            try:
                response = process_request(request)
            except Exception as exc:
                response, reached = await _converted(request, exc), index
                break
            if response is not None:
                reached = index + 1
                break
        if response is None:
            response = await self._view(request, match)
            if response is finisher.finished:
                return cast(HttpResponseBase, response)
        for _, process_response in reversed(plan[:reached]):
            if process_response is None:
                continue
            try:
                response = process_response(request, response)
            except Exception as exc:
                response = await _converted(request, exc)
        response._resource_closers.append(request.close)
        if response.status_code >= 400:
            await sync_to_async(_logged, thread_sensitive=False)(request, response)
        return cast(HttpResponseBase, response)

    def _finish(
        self, request: HttpRequest, plan: Sequence[Any], response: Any
    ) -> HttpResponseBase:
        """In the request's thread: what :meth:`_respond` does after the
        view, for a view's complete answer (not a stream)."""
        for _, process_response in reversed(plan):
            if process_response is None:
                continue
            try:
                response = process_response(request, response)
            except Exception as exc:
                response = response_for_exception(request, exc)
        response._resource_closers.append(request.close)
        response._handler_class = self.handler.__class__
        return cast(HttpResponseBase, response)

    def _close(self, request: HttpRequest, response: Any) -> None:
        """In the request's thread: its logging and ``close()``
        (``request_finished``), which :meth:`serve` does after sending."""
        try:
            if response.status_code >= 400:
                _logged(request, response)
        finally:
            response.close()

    async def _view(
        self, request: HttpRequest, match: ResolverMatch
    ) -> HttpResponseBase:
        request.resolver_match = match
        view: Any = self.handler.make_view_atomic(match.func)
        try:
            response = await view(request, *match.args, **match.kwargs)
            self.handler.check_response(response, match.func)
            if hasattr(response, "render") and callable(response.render):
                response = await sync_to_async(response.render)()
        except Exception as exc:
            return await _converted(request, exc)
        return cast(HttpResponseBase, response)


def _logged(request: HttpRequest, response: Any) -> None:
    """A 4xx/5xx answer logged to ``django.request``, as Django's handler does."""
    log_response(
        "%s: %s",
        response.reason_phrase,
        request.path,
        response=response,
        request=request,
    )


async def _converted(request: HttpRequest, exc: Exception) -> HttpResponseBase:
    """The response Django's handler makes of an exception."""
    return cast(
        HttpResponseBase,
        await sync_to_async(response_for_exception, thread_sensitive=False)(
            request, exc
        ),
    )


async def _send_response(
    handler: ASGIHandler, response: HttpResponseBase, send: Send
) -> None:
    """Django's own sending (it pins a stream to its iterator, chunks a body)."""
    response._handler_class = handler.__class__  # type: ignore[attr-defined]
    await handler.send_response(response, send)


def replayed(configured: Sequence[str], server: str) -> Sequence[str] | None:
    """The middleware of ``configured`` the mount still runs, in order, or
    ``None`` if any is unknown (logged once per setting: the mount then goes
    through Django's handler and the whole chain under that ``server``)."""
    kept = []
    for dotted in configured:
        if dotted in SKIPPED:
            continue
        if dotted not in REPLAYED:
            logger.info(
                "MIDDLEWARE has %s: the MCP mount is served through Django's "
                "handler and the whole middleware chain (no %s fast path).",
                dotted,
                server,
            )
            return None
        kept.append(dotted)
    return tuple(kept)


def _plan(configured: Sequence[str]) -> Sequence[Any] | None:
    """Instances of the replayed middleware, or ``None`` if any is unknown."""
    kept = replayed(configured, "ASGI")
    if kept is None:
        return None
    plan = []
    for dotted in kept:
        middleware = import_string(dotted)(_never)
        plan.append(
            (
                getattr(middleware, "process_request", None),
                getattr(middleware, "process_response", None),
            )
        )
    return tuple(plan)
