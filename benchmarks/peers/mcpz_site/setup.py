"""Migrate, then print a database bearer token for the benchmark user."""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.peers.mcpz_site.settings")
django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django_mcpz.bearer_tokens.models import Token  # noqa: E402

call_command("migrate", verbosity=0)
user, _ = User.objects.get_or_create(username="bench")
_, value = Token.create(name="bench", user=user)
print(value)
