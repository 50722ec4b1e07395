"""``mcp_unexpose SLUG ENGINE_ID [ENGINE_ID ...]`` or ``mcp_unexpose SLUG --all``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway import bookkeeping
from mcp_gateway.management.base import get_tenant, plural


class Command(BaseCommand):
    help = "Stop exposing engines to a tenant."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("engine_ids", nargs="*", metavar="ENGINE_ID")
        parser.add_argument("--all", action="store_true", help="Remove every exposure.")

    def handle(self, *args: Any, **options: Any) -> None:
        slug, engine_ids = options["slug"], options["engine_ids"]
        if options["all"] == bool(engine_ids):
            raise CommandError("Give either ENGINE_ID ... or --all.")
        tenant = get_tenant(slug)
        if options["all"]:
            removed = bookkeeping.clear(tenant, via="command")
        else:
            exposed = set(tenant.exposures.values_list("engine_id", flat=True))
            missing = [
                engine_id for engine_id in engine_ids if engine_id not in exposed
            ]
            if missing:
                raise CommandError(
                    f"Not exposed to {slug!r}: {', '.join(missing)}; nothing removed."
                )
            removed = bookkeeping.unexpose_many(tenant, engine_ids, via="command")
        self.stdout.write(f"Unexposed {plural(removed, 'engine')} from {slug!r}.")
