"""``mcp_tenant create|list|disable|add-member``."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError
from django.db.models import Count

from mcp_gateway import bookkeeping
from mcp_gateway.forms import clean_origin
from mcp_gateway.management.base import (
    USER_HELP,
    get_tenant,
    get_user,
    table,
    validation_message,
)
from mcp_gateway.models import Membership, Tenant

ROLES = Membership.Role.values


class Command(BaseCommand):
    help = "Create, list and disable tenants, and add their members."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Create a tenant.")
        create.add_argument("slug")
        create.add_argument("--name", default="", help="Human name (default: SLUG).")
        create.add_argument(
            "--allowed-origin",
            action="append",
            default=[],
            dest="allowed_origins",
            metavar="ORIGIN",
            help="A browser origin allowed to call the tenant; repeatable.",
        )
        actions.add_parser("list", help="List the tenants.")
        disable = actions.add_parser("disable", help="Disable a tenant.")
        disable.add_argument("slug")
        member = actions.add_parser("add-member", help="Add a user to a tenant.")
        member.add_argument("slug")
        member.add_argument("username", help=USER_HELP)
        member.add_argument("--create-user", action="store_true")
        member.add_argument("--role", metavar="|".join(ROLES))

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            self.create(options["slug"], options["name"], options["allowed_origins"])
        elif action == "list":
            self.list_tenants()
        elif action == "disable":
            self.disable(options["slug"])
        else:
            self.add_member(
                options["slug"],
                options["username"],
                role=options["role"],
                create_user=options["create_user"],
            )

    def create(self, slug: str, name: str, origins: list[str]) -> None:
        tenant = Tenant(slug=slug, name=name or slug, allowed_origins=_origins(origins))
        if Tenant.objects.filter(slug=slug).exists():
            raise CommandError(f"Tenant {slug!r} already exists.")
        try:
            tenant.full_clean()
            tenant.save()
        except ValidationError as exc:
            raise CommandError(validation_message(exc)) from exc
        except IntegrityError as exc:
            raise CommandError(f"Tenant {slug!r} already exists.") from exc
        self.stdout.write(f"Created tenant {slug!r}.")

    def list_tenants(self) -> None:
        tenants = Tenant.objects.annotate(
            member_count=Count("memberships", distinct=True),
        ).prefetch_related("exposures")
        rows = []
        for t in tenants:
            statuses = [s.status for s in bookkeeping.states(t.exposures.all())]
            rows.append(
                (
                    t.slug,
                    t.name,
                    "yes" if t.is_active else "no",
                    len(statuses),
                    statuses.count(bookkeeping.HELD),
                    statuses.count(bookkeeping.STALE),
                    t.member_count,
                )
            )
        if not rows:
            self.stdout.write("No tenants.")
            return
        headers = ("SLUG", "NAME", "ACTIVE", "TOOLS", "HELD", "STALE", "MEMBERS")
        self.stdout.write(table(headers, rows))

    def disable(self, slug: str) -> None:
        tenant = get_tenant(slug)
        if not tenant.is_active:
            self.stdout.write(f"Tenant {slug!r} is already disabled.")
            return
        tenant.is_active = False
        tenant.save(update_fields=["is_active"])
        self.stdout.write(f"Disabled tenant {slug!r}.")

    def add_member(
        self, slug: str, username: str, *, role: str | None, create_user: bool
    ) -> None:
        if role is not None and role not in ROLES:
            raise CommandError(f"Unknown role {role!r}; use member or admin.")
        tenant = get_tenant(slug)
        user = get_user(username, create=create_user)
        membership, created = Membership.objects.get_or_create(
            tenant=tenant, user=user, defaults={"role": role or Membership.Role.MEMBER}
        )
        if not created and role is not None and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        verb = "joined" if created else "is in"
        self.stdout.write(f"{username} {verb} tenant {slug!r} as {membership.role}.")


def _origins(values: list[str]) -> list[str]:
    try:
        return [clean_origin(value) for value in values]
    except ValidationError as exc:
        raise CommandError(validation_message(exc)) from exc
