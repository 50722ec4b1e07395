"""``mcp_usage [--tenant SLUG] [--since] [--until] [--format csv|json]``.

Calls per tenant, tool, UTC day and outcome, from the audit log (one
aggregate query). ``--since`` is inclusive, ``--until`` exclusive; each is a
date (UTC midnight) or an ISO 8601 date and time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway.audit import usage
from mcp_gateway.models import Tenant


class Command(BaseCommand):
    help = "Export calls per tenant, tool, UTC day and outcome from the audit log."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", help="Only this tenant.")
        parser.add_argument(
            "--since", help="From this date or time on (inclusive; UTC)."
        )
        parser.add_argument("--until", help="Before this date or time (UTC).")
        parser.add_argument("--format", choices=("csv", "json"), default="csv")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["tenant"]
        # Rows of a deleted tenant keep its slug: still exportable.
        if (
            slug is not None
            and not Tenant.objects.filter(slug=slug).exists()
            and not usage.rows(tenant=slug)
        ):
            raise CommandError(f"No tenant {slug!r} and no calls recorded for it.")
        since = _moment("--since", options["since"])
        until = _moment("--until", options["until"])
        if since is not None and until is not None and since >= until:
            raise CommandError("--since must be before --until.")
        found = usage.rows(tenant=slug, since=since, until=until)
        text = (
            usage.as_json(found) if options["format"] == "json" else usage.as_csv(found)
        )
        self.stdout.write(text, ending="" if text.endswith("\n") else "\n")


def _moment(option: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return usage.parse_moment(value)
    except ValueError as exc:
        raise CommandError(
            f"{option} must be a date (2026-12-01) or an ISO 8601 date and time."
        ) from exc
