"""Admission of an MCP request: boundary checks, tenant, credential, principal.

The checks run in the order DESIGN.md gives; the first refusal answers. An
authenticated request learns its tenant from the credential's own query;
only a request that needs the tenant earlier (a browser's ``Origin``) or
that is refused reads it through ``tenancy``. Shared by the sync and the
async view.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import get_script_prefix, get_urlconf, reverse

from engines_app.context import Principal
from mcp_gateway import credentials, jsonrpc, scopes
from mcp_gateway.audit import callrecord
from mcp_gateway.audit import log as audit
from mcp_gateway.audit.callrecord import CallRecord
from mcp_gateway.catalog import catalog_for
from mcp_gateway.conf import AUTH_DISABLED, auth_may_be_disabled, gateway_settings
from mcp_gateway.dispatch import asking, cancellation
from mcp_gateway.dispatch.scope import CallScope, Elicit
from mcp_gateway.endpoint import access, bearer, boundary, peer
from mcp_gateway.endpoint.challenge import challenge, insufficient_scope
from mcp_gateway.endpoint.tenancy import TenantLookup
from mcp_gateway.limits import quotas
from mcp_gateway.models import Tenant
from mcp_gateway.oauth.fetch import AuthUnavailable
from mcp_gateway.observability import observe

logger = logging.getLogger("mcp_gateway")

CANCELLED = "notifications/cancelled"


def admit(
    request: HttpRequest, slug: str
) -> tuple[Tenant, Principal, jsonrpc.Message] | HttpResponse:
    """Run every boundary check; return what dispatch needs or a refusal.

    A refusal for an unknown tenant is always 404, whichever check failed
    first after the target check, as the order of checks requires.
    """
    lookup = TenantLookup(slug)
    if (refusal := _check_route(request, slug, lookup)) is not None:
        return refusal
    refusal = (
        boundary.check_method(request)
        or boundary.check_declared_length(request)
        or boundary.check_authorization_syntax(request)
    )
    if refusal is not None:
        return _not_found() if lookup.missing else refusal
    authenticated = _authenticate(request, lookup)
    if isinstance(authenticated, HttpResponse):
        return authenticated
    refusal = boundary.check_content_type(request) or boundary.check_accept(request)
    if refusal is not None:
        return refusal
    message = _read_message(request)
    if isinstance(message, HttpResponse):
        return message
    if message.kind == "notification":
        _notified(*authenticated, message)
        return HttpResponse(status=202)
    if message.kind == "response":
        tenant, principal = authenticated
        asking.relay(tenant.pk, principal, message.payload)
        return HttpResponse(status=202)  # whether anyone waited for it or not
    return (*authenticated, message)


def _notified(tenant: Tenant, principal: Principal, message: jsonrpc.Message) -> None:
    """Act on a client notification: a 2025 cancel goes to its call's worker
    (``cancellation``); every other one is accepted and dropped."""
    if message.payload.get("method") == CANCELLED:
        cancellation.relay(tenant.pk, principal, message.payload.get("params"))


def admit_stream(
    request: HttpRequest, slug: str
) -> tuple[Tenant, Principal] | HttpResponse:
    """The checks of a GET that opens a change stream: ``admit``'s, less the
    method and the body (``endpoint.listen``, under ASGI only)."""
    lookup = TenantLookup(slug)
    if (refusal := _check_route(request, slug, lookup)) is not None:
        return refusal
    if (refusal := boundary.check_authorization_syntax(request)) is not None:
        return _not_found() if lookup.missing else refusal
    return _authenticate(request, lookup)


def _check_route(
    request: HttpRequest, slug: str, lookup: TenantLookup
) -> HttpResponse | None:
    if (refusal := _check_auth_mode()) is not None:
        return refusal
    prefix = get_script_prefix()
    path = _endpoint_path(prefix, get_urlconf() or settings.ROOT_URLCONF, slug)
    return _check_origin(request, lookup) or boundary.check_target(
        request, path, prefix
    )


@functools.lru_cache(maxsize=4096)
def _endpoint_path(prefix: str, urlconf: str, slug: str) -> str:
    """The canonical path of a tenant's mount (``reverse`` is costly per request)."""
    return reverse("mcp_gateway:endpoint", kwargs={"slug": slug}, urlconf=urlconf)


def _check_auth_mode() -> HttpResponse | None:
    """Refuse every request while authentication is disabled outside a
    loopback development setup: system checks do not run under gunicorn or
    uvicorn, so check E003 alone would not stop it."""
    if gateway_settings().AUTH_MODE != AUTH_DISABLED or auth_may_be_disabled():
        return None
    logger.error(
        "MCP authentication is disabled outside a loopback development setup "
        "(check mcp_gateway.E003); every MCP request is refused."
    )
    return boundary.unavailable()


def _check_origin(request: HttpRequest, lookup: TenantLookup) -> HttpResponse | None:
    if "Origin" not in request.headers:
        return None
    return boundary.check_origin(request, lookup.get())


def _authenticate(
    request: HttpRequest, lookup: TenantLookup
) -> tuple[Tenant, Principal] | HttpResponse:
    if gateway_settings().AUTH_MODE == AUTH_DISABLED:
        tenant = lookup.get()
        if tenant is None:
            return _not_found()
        return tenant, Principal(
            tenant=tenant.slug, tenant_id=tenant.pk, scopes=scopes.ANONYMOUS
        )
    token = boundary.bearer_token(request)
    user, credential = None, None
    if token is not None:
        try:
            user, credential = _verify(request, token, lookup)
        except AuthUnavailable:
            logger.exception("Authorization server unavailable for %r", lookup.slug)
            return boundary.unavailable()
    tenant = credential.tenant if credential is not None else lookup.get()
    if tenant is None:
        return _not_found()
    if user is None:
        return challenge(tenant, invalid=token is not None)
    if credential is None:  # a site's own backend: no scopes, no token row
        credential = credentials.Credential(user, tenant, frozenset())
    return tenant, _principal(credential)


def _verify(
    request: HttpRequest, token: str, lookup: TenantLookup
) -> tuple[Any, credentials.Credential | None]:
    """The user the site's auth backends accept, and what they verified."""
    with credentials.collecting() as granted:
        user = bearer.authenticate_bearer(request, token, lookup.loaded or lookup.slug)
    return user, None if user is None else granted.of(user)


def _not_found() -> HttpResponse:
    return boundary.plain(404, "Not found.")


def _principal(credential: credentials.Credential) -> Principal:
    tenant, user, token = credential.tenant, credential.user, credential.token
    fields: dict[str, Any] = {
        "tenant": tenant.slug,
        "tenant_id": tenant.pk,
        "user": user.get_username(),
        "token": token.prefix if token else None,
        "scopes": credential.scopes,
        "groups": access.groups_of(user, catalog_for(tenant)),
    }
    if token is not None and (token.calls_per_day or token.calls_per_month):
        return quotas.TokenPrincipal(
            **fields,
            calls_per_day=token.calls_per_day,
            calls_per_month=token.calls_per_month,
        )
    return Principal(**fields)


_MESSAGE = "_mcp_gateway_message"


def keep_message(request: HttpRequest, message: jsonrpc.Message) -> None:
    """``message``, parsed from ``request``'s body already, is what the
    next admission of ``request`` reads (once: a second admission of the
    request parses its body again)."""
    setattr(request, _MESSAGE, message)


def _read_message(request: HttpRequest) -> jsonrpc.Message | HttpResponse:
    kept: jsonrpc.Message | None = request.__dict__.pop(_MESSAGE, None)
    if kept is not None:
        return kept
    body = boundary.read_body(request)
    if isinstance(body, HttpResponse):
        return body
    try:
        message = jsonrpc.parse(body)
    except jsonrpc.JsonRpcError as exc:
        return JsonResponse(exc.body(), status=400)
    return message


def call_scope(
    request: HttpRequest,
    tenant: Tenant,
    principal: Principal,
    message: jsonrpc.Message,
    elicit: Elicit | None = None,
) -> CallScope | HttpResponse:
    """What dispatch needs, or a refusal; shared with the ASGI view.
    ``elicit`` asks the client during the call (``CallScope.elicit``).

    Raises:
        DatabaseError: the catalog could not be read.
    """
    catalog = catalog_for(tenant).visible_to(principal.groups)
    observe.admitted(request, tenant, catalog, message.payload)  # metrics, span
    record = audit.start_record(message.payload["method"], tenant, principal)
    if access.lacks_scope(message.payload, catalog, principal.scopes):
        if record is not None:
            _record_denied(request, record, tenant, principal, message)
        return insufficient_scope(tenant, message.id)
    return CallScope(
        tenant,
        catalog,
        principal,
        request.headers,
        record=record,
        elicit=elicit,
        client_gone=peer.probe(request.META),
    )


def _record_denied(
    request: HttpRequest,
    record: CallRecord,
    tenant: Tenant,
    principal: Principal,
    message: jsonrpc.Message,
) -> None:
    version = request.headers.get("MCP-Protocol-Version", "")
    record.begin(message.id, message.payload.get("params"), version)
    record.finish(callrecord.DENIED)
    audit.record_call(record, tenant, principal)
