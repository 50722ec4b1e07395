"""``mcp_expose SLUG ENGINE_ID [ENGINE_ID ...]`` or ``mcp_expose SLUG --all``;
``--require-confirmation`` creates the new exposures marked so (in the
exposing transaction) and marks the named engines already exposed (with
``--all``, every exposure of the tenant)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway import bookkeeping
from mcp_gateway.management.base import bookkeeping_errors, get_tenant, plural
from mcp_gateway.models import Exposure, Tenant


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
            help="The gateway asks before each call of these tools runs "
            "(marks them if they are already exposed).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug, engine_ids = options["slug"], options["engine_ids"]
        if options["all"] == bool(engine_ids):
            raise CommandError("Give either ENGINE_ID ... or --all.")
        tenant = get_tenant(slug)
        confirm = options["require_confirmation"]
        existing = list(tenant.exposures.all()) if confirm else []
        if not options["all"]:
            existing = [e for e in existing if e.engine_id in engine_ids]
        skipped: list[bookkeeping.Skipped] = []
        with bookkeeping_errors():
            if options["all"]:
                result = bookkeeping.expose_all(
                    tenant, via="command", requires_confirmation=confirm
                )
                created, skipped = result.exposed, result.skipped
            else:
                created = self._expose(tenant, engine_ids, existing, confirm)
        for skip in skipped:
            self.stderr.write(f"Skipped {skip.engine_id}: {skip.reason}")
        if options["all"] and not created and not skipped:
            self.stdout.write(f"Every installed engine is already exposed to {slug!r}.")
        elif created or not existing:
            names = ", ".join(exposure.tool_name for exposure in created)
            detail = f": {names}" if names else ""
            self.stdout.write(
                f"Exposed {plural(len(created), 'engine')} to {slug!r}{detail}."
            )
        self._mark(existing)

    def _expose(
        self,
        tenant: Tenant,
        engine_ids: list[str],
        existing: list[Exposure],
        confirm: bool,
    ) -> list[Exposure]:
        exposed = {e.engine_id for e in existing}
        new_ids = [engine_id for engine_id in engine_ids if engine_id not in exposed]
        if not new_ids:
            return []
        return bookkeeping.expose_many(
            tenant, new_ids, via="command", requires_confirmation=confirm
        )

    def _mark(self, existing: list[Exposure]) -> None:
        for exposure in existing:
            if exposure.requires_confirmation:
                self.stdout.write(
                    f"{exposure.tool_name} already requires confirmation."
                )
                continue
            bookkeeping.require_confirmation(exposure, True, via="command")
            self.stdout.write(f"{exposure.tool_name} now requires confirmation.")
