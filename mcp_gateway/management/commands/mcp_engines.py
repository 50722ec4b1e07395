"""``mcp_engines [--json]``: the installed engines and their tool names."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from engines_app.registry import default_registry
from mcp_gateway.management.base import table
from mcp_gateway.naming import tool_name


class Command(BaseCommand):
    help = "List the installed engines."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--json", action="store_true", help="Print a JSON list instead."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        engines = [
            {
                "id": engine.id,
                "tool_name": tool_name(engine.id),
                "version": engine.version,
                "title": engine.name,
            }
            for engine in default_registry
        ]
        if options["json"]:
            self.stdout.write(json.dumps(engines, indent=2))
            return
        headers = ("ID", "TOOL NAME", "VERSION", "TITLE")
        self.stdout.write(table(headers, [list(row.values()) for row in engines]))
