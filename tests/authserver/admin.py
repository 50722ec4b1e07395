"""Set up or change the authorization server's data, in its own process.

python -m tests.authserver.admin seed
python -m tests.authserver.admin expire TOKEN
"""

from __future__ import annotations

import hashlib
import os
import sys
from datetime import timedelta

import django

CLIENT = ("mcp-client", "mcp-client-secret")
GATEWAY = ("mcp-gateway", "mcp-gateway-secret")
USERS = ("alice", "bob", "carol")


def seed() -> None:
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    for name in USERS:
        User.objects.create_user(name, password=f"{name}-password")
    for (client_id, secret), grant in [
        (CLIENT, Application.GRANT_PASSWORD),
        (GATEWAY, Application.GRANT_CLIENT_CREDENTIALS),
    ]:
        Application.objects.create(
            name=client_id,
            client_id=client_id,
            client_secret=secret,
            client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=grant,
        )


def expire(token: str) -> None:
    from django.utils import timezone
    from oauth2_provider.models import AccessToken

    checksum = hashlib.sha256(token.encode()).hexdigest()
    past = timezone.now() - timedelta(hours=1)
    assert AccessToken.objects.filter(token_checksum=checksum).update(expires=past)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.authserver.settings")
    django.setup()
    if sys.argv[1] == "seed":
        seed()
    else:
        expire(sys.argv[2])
