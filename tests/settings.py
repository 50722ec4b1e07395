"""Test settings: the reference project plus a colliding engine."""

from __future__ import annotations

from config.settings import *  # noqa: F403
from config.settings import MCP_GATEWAY

MCP_GATEWAY = {
    **MCP_GATEWAY,
    "ENGINES": [
        "engines_app.demo.basic.ENGINES",
        "engines_app.demo.conformance.ENGINES",
        "tests.engines.COLLIDING",
    ],
    "PUBLIC_BASE_URL": "http://testserver",
}
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1", "[::1]"]
SECRET_KEY = "tests-only-secret-key-not-for-deployment-0123456789abcdef"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
