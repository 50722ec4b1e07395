"""``mcp_audit prune|seal|verify``: keep the audit log bounded and evident.

- ``prune --older-than DAYS``: delete old rows; each chain keeps an anchor.
  Parked calls (``CallApproval``) asked before the cutoff go too, once they
  can no longer decide a call.
- ``seal [--tenant SLUG]``: chain committed rows (run it from cron or a
  timer, every minute say); writes ``AUDIT_STREAM`` when it is set.
- ``verify [--tenant SLUG]``: recompute the chains; exits non-zero at the
  first broken link of any chain.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway import call_approvals
from mcp_gateway.audit import log as audit
from mcp_gateway.audit_chain import seal, verify
from mcp_gateway.management.base import plural

KIND_LABELS = {"call": "tool calls", "change": "exposure changes"}


class Command(BaseCommand):
    help = "Manage the audit log of tool calls and exposure changes."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        prune = actions.add_parser("prune", help="Delete rows older than DAYS.")
        prune.add_argument("--older-than", type=int, required=True, metavar="DAYS")
        sealing = actions.add_parser("seal", help="Chain the committed rows.")
        sealing.add_argument("--tenant", metavar="SLUG")
        checking = actions.add_parser("verify", help="Recompute the chains.")
        checking.add_argument("--tenant", metavar="SLUG")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "seal":
            count = seal.seal(options["tenant"])
            self.stdout.write(f"Sealed {plural(count, 'row')}.")
        elif action == "verify":
            self._verify(options["tenant"])
        else:
            self._prune(options["older_than"])

    def _prune(self, days: int) -> None:
        if days < 0:
            raise CommandError("--older-than must be zero or more days.")
        calls, changes = audit.prune(days)
        parked = call_approvals.prune(days)
        self.stdout.write(
            f"Deleted {plural(calls, 'tool call')}, "
            f"{plural(changes, 'exposure change')} and "
            f"{plural(parked, 'parked call')} older than {days} days."
        )

    def _verify(self, tenant: str | None) -> None:
        reports = verify.verify(tenant)
        if tenant is not None and not reports:
            raise CommandError(f"No audit rows of tenant {tenant!r}.")
        for report in reports:
            label = f"{report.tenant_slug} {KIND_LABELS[report.kind]}"
            pending = f", {report.pending} pending" if report.pending else ""
            if report.ok:
                self.stdout.write(
                    f"{label}: {report.verified} sealed rows verified{pending}."
                )
            else:
                self.stdout.write(f"{label}: BROKEN: {report.broken}{pending}.")
        broken = [r for r in reports if not r.ok]
        if broken:
            raise CommandError(f"{plural(len(broken), 'chain')} broken.")
