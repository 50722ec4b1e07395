"""``mcp_expose SLUG ENGINE_ID [ENGINE_ID ...]`` or ``mcp_expose SLUG --all``;
``--require-confirmation`` marks the new exposures so."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway import bookkeeping
from mcp_gateway.management.base import bookkeeping_errors, get_tenant, plural


class Command(BaseCommand):
    help = "Expose engines to a tenant as MCP tools: all of them or none."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("engine_ids", nargs="*", metavar="ENGINE_ID")
        parser.add_argument(
            "--all", action="store_true", help="Expose every installed engine."
        )
        parser.add_argument(
            "--require-confirmation",
            action="store_true",
            help="The gateway asks before each call of these tools runs.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug, engine_ids = options["slug"], options["engine_ids"]
        if options["all"] == bool(engine_ids):
            raise CommandError("Give either ENGINE_ID ... or --all.")
        tenant = get_tenant(slug)
        skipped: list[bookkeeping.Skipped] = []
        with bookkeeping_errors():
            if options["all"]:
                result = bookkeeping.expose_all(tenant, via="command")
                created, skipped = result.exposed, result.skipped
            else:
                created = bookkeeping.expose_many(tenant, engine_ids, via="command")
        if options["require_confirmation"]:
            for exposure in created:
                bookkeeping.require_confirmation(exposure, True, via="command")
        for skip in skipped:
            self.stderr.write(f"Skipped {skip.engine_id}: {skip.reason}")
        if options["all"] and not created and not skipped:
            self.stdout.write(f"Every installed engine is already exposed to {slug!r}.")
            return
        names = ", ".join(exposure.tool_name for exposure in created)
        detail = f": {names}" if names else ""
        self.stdout.write(
            f"Exposed {plural(len(created), 'engine')} to {slug!r}{detail}."
        )
