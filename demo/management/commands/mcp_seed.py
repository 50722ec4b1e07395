"""``mcp_seed --tenants N --exposures M``: filler tenants for scale tests.

Creates the tenants ``PREFIX-00000`` … ``PREFIX-{N-1}`` that do not exist
yet, each exposing the first M installed engines (in id order), through the
bookkeeping service's bulk path (``bookkeeping.create_exposed``: one
transaction, the collision checks, a catalog-version bump and an exposure
event per new tenant; PostgreSQL ``COPY``). It touches no other tenant and
issues no tokens, so nobody can call the filler tenants.

A command of the reference project (the scale benchmark seeds with it), not
of the distributed app.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping
from mcp_gateway.models import Tenant


class Command(BaseCommand):
    help = "Bulk-create filler tenants, each exposing the first M engines."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenants", type=int, required=True, metavar="N")
        parser.add_argument("--exposures", type=int, default=0, metavar="M")
        parser.add_argument("--prefix", default="seed", help="Slug prefix.")

    def handle(self, *args: Any, **options: Any) -> None:
        count, per_tenant = options["tenants"], options["exposures"]
        prefix: str = options["prefix"]
        if count < 0 or per_tenant < 0:
            raise CommandError("--tenants and --exposures must not be negative.")
        engine_ids = _first_engines(per_tenant)
        started = time.monotonic()
        slugs = _missing_slugs(prefix, count)
        tenants = bookkeeping.create_exposed(slugs, engine_ids, via="command")
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"Seeded {len(tenants)} tenants x {per_tenant} exposures "
            f"({len(tenants) * per_tenant} rows) in {elapsed:.1f}s."
        )


def _first_engines(count: int) -> list[str]:
    engines = list(default_registry)[:count]
    if len(engines) < count:
        raise CommandError(
            f"Only {len(engines)} engines are installed; cannot expose {count}."
        )
    return [engine.id for engine in engines]


def _missing_slugs(prefix: str, count: int) -> list[str]:
    slugs = [f"{prefix}-{index:05d}" for index in range(count)]
    taken = set(
        Tenant.objects.filter(slug__startswith=f"{prefix}-").values_list(
            "slug", flat=True
        )
    )
    return [slug for slug in slugs if slug not in taken]
