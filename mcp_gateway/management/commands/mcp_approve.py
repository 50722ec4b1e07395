"""``mcp_approve SLUG ENGINE_ID [ENGINE_ID ...]`` or ``mcp_approve SLUG --all``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway import bookkeeping
from mcp_gateway.management.base import bookkeeping_errors, get_tenant, plural


class Command(BaseCommand):
    help = (
        "Approve the installed definition of exposed engines whose tool "
        "definition changed: a held tool is served again, by every worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("engine_ids", nargs="*", metavar="ENGINE_ID")
        parser.add_argument(
            "--all",
            action="store_true",
            help="Approve every exposure of the tenant whose definition changed.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug, engine_ids = options["slug"], options["engine_ids"]
        if options["all"] == bool(engine_ids):
            raise CommandError("Give either ENGINE_ID ... or --all.")
        tenant = get_tenant(slug)
        with bookkeeping_errors():
            approved = bookkeeping.approve(
                tenant, None if options["all"] else engine_ids, via="command"
            )
        if not approved:
            self.stdout.write(f"No changed exposure of {slug!r} to approve.")
            return
        names = ", ".join(exposure.tool_name for exposure in approved)
        self.stdout.write(
            f"Approved {plural(len(approved), 'exposure')} of {slug!r}: {names}."
        )
