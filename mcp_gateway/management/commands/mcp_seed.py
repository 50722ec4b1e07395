"""``mcp_seed --tenants N --exposures M``: filler tenants for scale tests.

Creates the tenants ``PREFIX-00000`` … ``PREFIX-{N-1}`` that do not exist
yet, each exposing the first M installed engines (in id order), with bulk
inserts (PostgreSQL ``COPY``; ``bulk_create`` elsewhere) in one transaction.
It touches no other tenant and bumps no catalog version: the new tenants
start at version 1 and nothing has cached them yet. It issues no tokens, so
nobody can call the filler tenants.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from django.utils import timezone

from engines_app.registry import default_registry
from mcp_gateway.fingerprint import fingerprint
from mcp_gateway.models import Exposure, Tenant
from mcp_gateway.naming import tool_name

BATCH_SIZE = 2000
ExposureRow = tuple[int, str, str, str, str, datetime]


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
        engines = _engine_columns(per_tenant)
        started = time.monotonic()
        with transaction.atomic():
            tenant_ids = _create_tenants(_missing_slugs(prefix, count))
            _insert_exposures(_exposure_rows(tenant_ids, engines))
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"Seeded {len(tenant_ids)} tenants x {per_tenant} exposures "
            f"({len(tenant_ids) * per_tenant} rows) in {elapsed:.1f}s."
        )


def _engine_columns(count: int) -> list[tuple[str, str, str, str]]:
    """(engine id, tool name, fingerprint, version) of the first engines."""
    engines = list(default_registry)[:count]
    if len(engines) < count:
        raise CommandError(
            f"Only {len(engines)} engines are installed; cannot expose {count}."
        )
    return [(e.id, tool_name(e.id), fingerprint(e), e.version) for e in engines]


def _missing_slugs(prefix: str, count: int) -> list[str]:
    slugs = [f"{prefix}-{index:05d}" for index in range(count)]
    taken = set(
        Tenant.objects.filter(slug__startswith=f"{prefix}-").values_list(
            "slug", flat=True
        )
    )
    return [slug for slug in slugs if slug not in taken]


def _create_tenants(slugs: Sequence[str]) -> list[int]:
    now = timezone.now()
    rows = [Tenant(slug=slug, name=slug, created_at=now) for slug in slugs]
    Tenant.objects.bulk_create(rows, batch_size=BATCH_SIZE)
    ids = dict(Tenant.objects.filter(slug__in=slugs).values_list("slug", "pk"))
    return [ids[slug] for slug in slugs]


def _exposure_rows(
    tenant_ids: Iterable[int], engines: Sequence[tuple[str, str, str, str]]
) -> Iterable[ExposureRow]:
    now = timezone.now()
    for tenant_id in tenant_ids:
        for engine_id, name, digest, version in engines:
            yield (tenant_id, engine_id, name, digest, version, now)


_COLUMNS = ("tenant_id", "engine_id", "tool_name", "fingerprint", "engine_version")


def _insert_exposures(rows: Iterable[ExposureRow]) -> None:
    if connection.vendor == "postgresql":
        _copy_exposures(rows)
        return
    batch: list[Exposure] = []
    for tenant_id, engine_id, name, digest, version, created_at in rows:
        batch.append(
            Exposure(
                tenant_id=tenant_id,
                engine_id=engine_id,
                tool_name=name,
                fingerprint=digest,
                engine_version=version,
                created_at=created_at,
            )
        )
        if len(batch) >= BATCH_SIZE:
            Exposure.objects.bulk_create(batch)
            batch = []
    Exposure.objects.bulk_create(batch)


def _copy_exposures(rows: Iterable[ExposureRow]) -> None:
    table = connection.ops.quote_name(Exposure._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in (*_COLUMNS, "created_at"))
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor: COPY is not in the DB-API
        with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
