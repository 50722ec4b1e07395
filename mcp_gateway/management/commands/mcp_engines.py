"""``mcp_engines [--json] [--tenant SLUG]``: the installed engines, or one
tenant's exposures with their status (live, held, changed, stale) and
whether each requires confirmation."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from engines_app.registry import default_registry
from mcp_gateway import bookkeeping
from mcp_gateway.fingerprint import fingerprint
from mcp_gateway.management.base import get_tenant, table
from mcp_gateway.models import Exposure
from mcp_gateway.naming import tool_name


class Command(BaseCommand):
    help = "List the installed engines, or a tenant's exposures and their status."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--json", action="store_true", help="Print a JSON list instead."
        )
        parser.add_argument(
            "--tenant",
            metavar="SLUG",
            help="List this tenant's exposures: status, approved and "
            "installed version, fingerprints, whether each requires confirmation.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["tenant"]:
            self.exposures(options["tenant"], as_json=options["json"])
            return
        states = bookkeeping.states(Exposure.objects.all())
        counts: dict[str, dict[str, int]] = {}
        for state in states:
            per = counts.setdefault(state.exposure.engine_id, {})
            per[state.status] = per.get(state.status, 0) + 1
        engines: list[dict[str, Any]] = [
            {
                "id": engine.id,
                "tool_name": tool_name(engine.id),
                "version": engine.version,
                "title": engine.name,
                "fingerprint": fingerprint(engine),
                "exposures": counts.get(engine.id, {}),
            }
            for engine in default_registry
        ]
        if options["json"]:
            self.stdout.write(json.dumps(engines, indent=2))
            return
        headers = ("ID", "TOOL NAME", "VERSION", "TITLE", "FINGERPRINT", "EXPOSURES")
        self.stdout.write(
            table(
                headers,
                [
                    [
                        e["id"],
                        e["tool_name"],
                        e["version"],
                        e["title"],
                        e["fingerprint"][:12],
                        _counts(e["exposures"]),
                    ]
                    for e in engines
                ],
            )
        )

    def exposures(self, slug: str, *, as_json: bool) -> None:
        tenant = get_tenant(slug)
        rows = [
            {
                "id": state.exposure.engine_id,
                "tool_name": state.exposure.tool_name,
                "status": state.status,
                "approved_version": state.exposure.engine_version,
                "installed_version": None
                if state.engine is None
                else str(state.engine.version),
                "approved_fingerprint": state.exposure.fingerprint,
                "fingerprint": None
                if state.engine is None
                else fingerprint(state.engine),
                "requires_confirmation": state.exposure.requires_confirmation,
            }
            for state in bookkeeping.states(tenant.exposures.all())
        ]
        if as_json:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        headers = ("ID", "TOOL NAME", "STATUS", "APPROVED", "INSTALLED", "CONFIRM")
        self.stdout.write(
            table(
                headers,
                [
                    [
                        r["id"],
                        r["tool_name"],
                        r["status"],
                        r["approved_version"],
                        r["installed_version"] or "-",
                        "yes" if r["requires_confirmation"] else "no",
                    ]
                    for r in rows
                ],
            )
        )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "-"
