"""Who may do what: each API route and admin action, and what it needs.

One table, read by the API's permission class, the admin's actions and the
tests, and shown in docs/security.md. Every route and action needs
``is_staff`` first; a row then names Django model permissions of the
``mcp_gateway`` app. A requirement is a tuple of groups: every group must
hold, and a group holds when the user has one of its permissions (reads
accept view or change, as the admin does).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

APP = "mcp_gateway"
Needs = tuple[tuple[str, ...], ...]
STAFF: Needs = ()
"""Staff status alone: the schema and its documentation hold no data."""


def read(model: str) -> Needs:
    return ((f"view_{model}", f"change_{model}"),)


def write(codename: str) -> Needs:
    return ((codename,),)


@dataclass(frozen=True)
class ApiRoute:
    method: str
    path: str
    """Under the API's mount, as the docs show it (``/api/`` there)."""
    name: str
    """The URL pattern's name in ``mcp_gateway.api.urls``."""
    needs: Needs
    note: str = ""


@dataclass(frozen=True)
class AdminAction:
    model: str
    action: str
    label: str
    needs: Needs
    note: str = ""


@dataclass(frozen=True)
class TokenRoute:
    """A route outside the API that a configured token opens, not staff."""

    method: str
    path: str
    name: str
    """The URL pattern's name, with its namespace."""
    token: str
    """The ``MCP_GATEWAY`` setting holding the bearer token."""
    note: str = ""


TENANT = "tenants/{slug}/"
API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute("GET", "", "root", STAFF, "lists the routes; links the schema and docs"),
    ApiRoute("GET", "schema/", "schema", STAFF),
    ApiRoute("GET", "docs/", "docs", STAFF),
    ApiRoute(
        "GET",
        "engines/",
        "engines",
        (("view_exposure", "change_exposure", "add_exposure"),),
        "the menu of what could be exposed: whoever sees or makes exposures",
    ),
    ApiRoute("GET", "audit/", "audit", read("toolcall")),
    ApiRoute(
        "GET",
        "usage/",
        "usage",
        read("toolcall"),
        "calls per tenant, tool, UTC day and outcome, from the audit log",
    ),
    ApiRoute("GET", "tenants/", "tenants", read("tenant")),
    ApiRoute("POST", "tenants/", "tenants", write("add_tenant")),
    ApiRoute("GET", TENANT, "tenant", read("tenant")),
    ApiRoute(
        "PATCH", TENANT, "tenant", write("change_tenant"), "the slug never changes"
    ),
    ApiRoute("GET", f"{TENANT}members/", "members", read("membership")),
    ApiRoute(
        "POST",
        f"{TENANT}members/",
        "members",
        write("add_membership"),
        "changing an existing member's role also needs `change_membership`",
    ),
    ApiRoute(
        "DELETE", f"{TENANT}members/{{username}}/", "member", write("delete_membership")
    ),
    ApiRoute("GET", f"{TENANT}exposures/", "exposures", read("exposure")),
    ApiRoute("POST", f"{TENANT}exposures/", "exposures", write("add_exposure")),
    ApiRoute(
        "POST", f"{TENANT}exposures/expose-all/", "expose-all", write("add_exposure")
    ),
    ApiRoute("GET", f"{TENANT}exposures/{{engine_id}}/", "exposure", read("exposure")),
    ApiRoute(
        "PATCH",
        f"{TENANT}exposures/{{engine_id}}/",
        "exposure",
        write("change_exposure"),
        "`requires_confirmation` only: the gateway asks before each call runs",
    ),
    ApiRoute(
        "DELETE",
        f"{TENANT}exposures/{{engine_id}}/",
        "exposure",
        write("delete_exposure"),
    ),
    ApiRoute(
        "POST",
        f"{TENANT}exposures/{{engine_id}}/approve/",
        "approve",
        write("change_exposure"),
        "approves the installed definition: a held tool is served again",
    ),
    ApiRoute(
        "GET",
        f"{TENANT}exposure-events/",
        "exposure-events",
        read("exposureevent"),
        "expose, unexpose, approve, clear and drift events",
    ),
    ApiRoute("GET", f"{TENANT}tokens/", "tokens", read("apitoken")),
    ApiRoute(
        "POST",
        f"{TENANT}tokens/",
        "tokens",
        write("add_apitoken"),
        "for any user, who becomes a member; a superuser's token only by a superuser",
    ),
    ApiRoute(
        "DELETE",
        f"{TENANT}tokens/{{prefix}}/",
        "token",
        write("delete_apitoken"),
        "revokes",
    ),
    ApiRoute(
        "GET",
        f"{TENANT}secrets/",
        "secrets",
        read("enginesecret"),
        "names, who set them and when; never a value",
    ),
    ApiRoute(
        "POST",
        f"{TENANT}secrets/",
        "secrets",
        write("add_enginesecret"),
        "replacing an existing secret also needs `change_enginesecret`; "
        "the answer holds no value",
    ),
    ApiRoute(
        "DELETE",
        f"{TENANT}secrets/{{engine_id}}/{{name}}/",
        "secret",
        write("delete_enginesecret"),
    ),
)

ADMIN_ACTIONS: tuple[AdminAction, ...] = (
    AdminAction(
        "tenant", "expose_all", "Expose all installed engines", write("add_exposure")
    ),
    AdminAction(
        "tenant",
        "unexpose_all",
        "Unexpose all",
        write("delete_exposure"),
        "asks for confirmation; so does the tenant page's “Unexpose all” link, "
        "which needs the same",
    ),
    AdminAction(
        "tenant",
        "approve_changes",
        "Approve changed tools",
        write("change_exposure"),
        "asks for confirmation, listing every change",
    ),
    AdminAction(
        "tenant", "delete_selected", "Delete selected tenants", write("delete_tenant")
    ),
    AdminAction(
        "exposure",
        "approve_selected",
        "Approve changes of selected exposures",
        write("change_exposure"),
        "asks for confirmation, listing every change; so does the exposure "
        "page's “Approve changes” button, which needs the same",
    ),
    AdminAction(
        "exposure",
        "delete_selected",
        "Unexpose selected exposures",
        write("delete_exposure"),
        "unexposes (the engines stay installed)",
    ),
    AdminAction(
        "callapproval",
        "approve_selected",
        "Approve selected calls",
        write("change_callapproval"),
        "pending, unexpired calls only; the caller's retry with the same "
        "arguments then runs once",
    ),
    AdminAction(
        "callapproval",
        "deny_selected",
        "Deny selected calls",
        write("change_callapproval"),
        "pending, unexpired calls only",
    ),
    AdminAction(
        "membership",
        "delete_selected",
        "Delete selected memberships",
        write("delete_membership"),
    ),
    AdminAction(
        "apitoken",
        "revoke_selected",
        "Revoke selected tokens",
        write("change_apitoken"),
        "so does the token page's “Revoke this token” button, which needs the same",
    ),
    AdminAction(
        "apitoken",
        "delete_selected",
        "Delete selected MCP tokens",
        write("delete_apitoken"),
    ),
    AdminAction(
        "enginesecret",
        "delete_selected",
        "Delete selected engine secrets",
        write("delete_enginesecret"),
    ),
)

TOKEN_ROUTES: tuple[TokenRoute, ...] = (
    TokenRoute(
        "GET",
        "/metrics",
        "mcp_gateway_metrics:metrics",
        "METRICS_TOKEN",
        "setting unset: 404 (and no metrics kept); a missing or wrong token: "
        "401; staff status grants nothing here",
    ),
)

_ROUTES = {(route.name, route.method): route for route in API_ROUTES}


def api_route(name: str | None, method: str) -> ApiRoute | None:
    """The row of a route (``HEAD`` reads as ``GET``), or ``None``."""
    if method == "HEAD":
        method = "GET"
    return _ROUTES.get((name or "", method))


def admin_action(model: str, action: str) -> AdminAction:
    """The row of an admin action.

    Raises:
        KeyError: the table has no such action.
    """
    for row in ADMIN_ACTIONS:
        if (row.model, row.action) == (model, action):
            return row
    raise KeyError(f"{model}.{action}")


def allows(user: Any, needs: Needs) -> bool:
    """Whether an active staff user holds every group of ``needs``."""
    if not (user.is_active and user.is_staff):
        return False
    return all(any(has(user, codename) for codename in group) for group in needs)


def has(user: Any, codename: str) -> bool:
    return bool(user.has_perm(f"{APP}.{codename}"))


def codenames(needs: Needs) -> set[str]:
    return {codename for group in needs for codename in group}


# -- The table as docs/security.md shows it ------------------------------------


def describe(needs: Needs) -> str:
    if not needs:
        return "staff only"
    return " and ".join(" or ".join(f"`{c}`" for c in group) for group in needs)


def table_rows(api_prefix: str = "/api/") -> list[str]:
    """The Markdown rows of the table, API routes first."""
    rows = [
        _row(f"API `{r.method} {api_prefix}{r.path}`", r.needs, r.note)
        for r in API_ROUTES
    ]
    rows += [
        _row(f"admin {a.model}: “{a.label}” (`{a.action}`)", a.needs, a.note)
        for a in ADMIN_ACTIONS
    ]
    rows += [
        f"| metrics `{t.method} {t.path}` | not staff: `Authorization: Bearer "
        f"<{t.token}>` | {t.note} |"
        for t in TOKEN_ROUTES
    ]
    return rows


def _row(where: str, needs: Needs, note: str) -> str:
    return f"| {where} | {describe(needs)} | {note} |"


def markdown_table(api_prefix: str = "/api/") -> str:
    head = ["| route or action | needs (besides `is_staff`) | notes |", "|---|---|---|"]
    return "\n".join([*head, *table_rows(api_prefix)])


def all_codenames(rows: Iterable[ApiRoute | AdminAction]) -> set[str]:
    return {codename for row in rows for codename in codenames(row.needs)}
