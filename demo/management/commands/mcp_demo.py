"""``mcp_demo``: a demo tenant with every engine, a staff login and a token.

Idempotent: a re-run keeps the tenant, its exposures and the password, and
issues a fresh token (a stored token's secret cannot be shown again).
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandParser
from django.db.models import EmailField, Model
from django.urls import reverse

from mcp_gateway import bookkeeping, tokens
from mcp_gateway.conf import gateway_settings
from mcp_gateway.management.base import bookkeeping_errors
from mcp_gateway.models import Tenant

SLUG, NAME, USERNAME, EMAIL = "demo", "Demo", "admin", "admin@example.com"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"


class Command(BaseCommand):
    help = "Set up a demo tenant, a staff login and a member token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset-password",
            action="store_true",
            help="Give the existing staff user a new random password.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant, _ = Tenant.objects.get_or_create(slug=SLUG, defaults={"name": NAME})
        with bookkeeping_errors():
            bookkeeping.expose_all(tenant, via="command")
        user, password = self.staff_user(reset=options["reset_password"])
        issued = tokens.issue(tenant, user, name="mcp_demo")
        base = (gateway_settings().PUBLIC_BASE_URL or DEFAULT_BASE_URL).rstrip("/")
        tools = tenant.exposures.count()
        self.stdout.write(f"Tenant: {SLUG} ({tools} tools exposed)")
        admin_url = f"{base}{reverse('admin:index')}"
        login = user.get_username()
        self.stdout.write(f"Staff login: {admin_url}  username: {login}")
        if password:
            self.stdout.write(f"Password: {password}")
        else:
            self.stdout.write(
                f"User {login!r} exists; password unchanged "
                "(--reset-password sets a new one)."
            )
        self.stdout.write(f"MCP URL: {base}/t/{SLUG}/mcp")
        self.stdout.write(f"Token: {issued.secret}")

    def staff_user(self, *, reset: bool) -> tuple[User, str | None]:
        """Return the staff user and its password when newly set.

        The login is ``admin``, or ``admin@example.com`` when the user model
        signs in by email (its ``USERNAME_FIELD`` is an email field).
        """
        model = get_user_model()
        field = model.USERNAME_FIELD
        login = EMAIL if _is_email(model, field) else USERNAME
        password = secrets.token_urlsafe(12)
        user = model._default_manager.filter(**{field: login}).first()
        if user is None:
            user = model._default_manager.create_superuser(
                **{field: login}, password=password
            )
            return user, password
        if not reset:
            return user, None
        user.set_password(password)
        user.save(update_fields=["password"])
        return user, password


def _is_email(model: type[Model], field: str) -> bool:
    return isinstance(model._meta.get_field(field), EmailField)
