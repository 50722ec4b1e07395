"""``mcp_audit prune --older-than DAYS``: keep the audit log bounded."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway.audit import log as audit
from mcp_gateway.management.base import plural


class Command(BaseCommand):
    help = "Manage the audit log of tool calls and exposure changes."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        prune = actions.add_parser("prune", help="Delete rows older than DAYS.")
        prune.add_argument("--older-than", type=int, required=True, metavar="DAYS")

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["older_than"]
        if days < 0:
            raise CommandError("--older-than must be zero or more days.")
        calls, changes = audit.prune(days)
        self.stdout.write(
            f"Deleted {plural(calls, 'tool call')} and "
            f"{plural(changes, 'exposure change')} older than {days} days."
        )
