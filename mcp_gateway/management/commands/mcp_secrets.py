"""``mcp_secrets``: engine secrets from the server's shell.

- ``list [--tenant SLUG]``: names, who set them and when (never a value);
- ``set SLUG ENGINE NAME``: reads the value from standard input (a pipe) or
  a hidden prompt, never from the command line (shell history, ``ps``);
- ``delete SLUG ENGINE NAME``;
- ``rotate``: re-encrypt every secret under the newest key of
  ``SECRET_KEYS``; then older keys may be dropped from the list.
"""

from __future__ import annotations

import getpass
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway.engine_secrets import service
from mcp_gateway.engine_secrets.keys import SecretKeyError
from mcp_gateway.engine_secrets.models import EngineSecret
from mcp_gateway.management.base import plural
from mcp_gateway.models import Tenant


class Command(BaseCommand):
    help = "Set, list, delete and re-encrypt per-tenant engine secrets."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        listing = actions.add_parser("list", help="Names, never values.")
        listing.add_argument("--tenant", metavar="SLUG")
        for name in ("set", "delete"):
            action = actions.add_parser(name)
            action.add_argument("tenant", metavar="SLUG")
            action.add_argument("engine", metavar="ENGINE")
            action.add_argument("name", metavar="NAME")
        actions.add_parser("rotate", help="Re-encrypt under the newest key.")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "list":
                self._list(options["tenant"])
            elif action == "rotate":
                rotated, total = service.rotate()
                self.stdout.write(
                    f"Re-encrypted {plural(rotated, 'secret')} of {total} under "
                    "the newest key."
                )
            elif action == "set":
                self._set(options)
            else:
                self._delete(options)
        except (service.SecretError, SecretKeyError) as exc:
            raise CommandError(str(exc)) from None

    def _tenant(self, slug: str) -> Tenant:
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant {slug!r}.")
        return tenant

    def _list(self, slug: str | None) -> None:
        secrets = EngineSecret.objects.select_related("tenant")
        if slug is not None:
            secrets = secrets.filter(tenant=self._tenant(slug))
        for secret in secrets:
            by = f" by {secret.set_by_name}" if secret.set_by_name else ""
            self.stdout.write(
                f"{secret.tenant.slug} {secret.engine_id} {secret.name}: "
                f"set on {secret.set_at:%Y-%m-%d %H:%M} UTC{by}"
            )

    def _set(self, options: dict[str, Any]) -> None:
        tenant = self._tenant(options["tenant"])
        if sys.stdin.isatty():
            value = getpass.getpass(f"Value of {options['name']}: ")
        else:
            value = sys.stdin.read().rstrip("\r\n")
        service.set_secret(tenant, options["engine"], options["name"], value)
        self.stdout.write(
            f"Set {options['name']} of {options['engine']} for {tenant.slug}."
        )

    def _delete(self, options: dict[str, Any]) -> None:
        tenant = self._tenant(options["tenant"])
        if not service.delete_secret(tenant, options["engine"], options["name"]):
            raise CommandError("No such secret.")
        self.stdout.write(
            f"Deleted {options['name']} of {options['engine']} for {tenant.slug}."
        )
