"""``mcp_token create|revoke|list``: tenant-bound API tokens."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from mcp_gateway import scopes as known_scopes
from mcp_gateway import tokens
from mcp_gateway.management.base import USER_HELP, get_tenant, get_user, table
from mcp_gateway.models import ApiToken


class Command(BaseCommand):
    help = "Issue, revoke and list a tenant's API tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser(
            "create", help="Issue a token; prints it alone, once."
        )
        create.add_argument("slug")
        create.add_argument("--user", required=True, metavar="USERNAME", help=USER_HELP)
        create.add_argument("--create-user", action="store_true")
        create.add_argument(
            "--scope",
            action="append",
            dest="scopes",
            metavar="SCOPE",
            help=f"Repeatable; one of {', '.join(sorted(known_scopes.KNOWN))}.",
        )
        create.add_argument("--expires-in", type=int, metavar="SECONDS")
        create.add_argument(
            "--calls-per-day",
            type=int,
            metavar="N",
            help="The token's own quota of tool calls per UTC day.",
        )
        create.add_argument(
            "--calls-per-month",
            type=int,
            metavar="N",
            help="The token's own quota of tool calls per UTC calendar month.",
        )
        revoke = actions.add_parser("revoke", help="Revoke a token.")
        revoke.add_argument("token", metavar="TOKEN_OR_PREFIX")
        listing = actions.add_parser("list", help="List a tenant's tokens.")
        listing.add_argument("slug")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            self.create(
                options["slug"],
                options["user"],
                create_user=options["create_user"],
                scopes=options["scopes"] or list(known_scopes.TOKEN_DEFAULT),
                expires_in=options["expires_in"],
                calls_per_day=options["calls_per_day"],
                calls_per_month=options["calls_per_month"],
            )
        elif action == "revoke":
            self.revoke(options["token"])
        else:
            self.list_tokens(options["slug"])

    def create(
        self,
        slug: str,
        username: str,
        *,
        create_user: bool,
        scopes: list[str],
        expires_in: int | None,
        calls_per_day: int | None = None,
        calls_per_month: int | None = None,
    ) -> None:
        unknown = sorted(set(scopes) - known_scopes.KNOWN)
        if unknown:
            known = ", ".join(sorted(known_scopes.KNOWN))
            raise CommandError(f"Unknown scope(s) {', '.join(unknown)}; use {known}.")
        tenant = get_tenant(slug)
        user = get_user(username, create=create_user)
        try:
            issued = tokens.issue(
                tenant,
                user,
                scopes=scopes,
                expires_in=expires_in,
                calls_per_day=calls_per_day,
                calls_per_month=calls_per_month,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(issued.secret)

    def revoke(self, token_or_prefix: str) -> None:
        token = tokens.revoke(token_or_prefix)
        if token is None:
            raise CommandError("No such token.")
        self.stdout.write(
            f"Revoked token {token.prefix} of {token.user.get_username()} "
            f"in {token.tenant}."
        )

    def list_tokens(self, slug: str) -> None:
        tenant = get_tenant(slug)
        rows = [
            (
                t.prefix,
                t.user.get_username(),
                " ".join(t.scopes),
                _state(t),
                _when(t.last_used_at),
            )
            for t in tenant.tokens.select_related("user")
        ]
        if not rows:
            self.stdout.write(f"Tenant {slug!r} has no tokens.")
            return
        headers = ("PREFIX", "USER", "SCOPES", "STATE", "LAST USED")
        self.stdout.write(table(headers, rows))


def _state(token: ApiToken) -> str:
    if token.revoked_at is not None:
        return "revoked"
    return "active" if token.is_usable else "expired"


def _when(moment: Any) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M") if moment else "-"
