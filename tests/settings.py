"""Test settings: the reference project plus a colliding engine."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from config.settings import *  # noqa: F403
from config.settings import MCP_GATEWAY

MCP_GATEWAY_ENGINES = [
    "demo.basic.ENGINES",
    "demo.conformance.ENGINES",
    "demo.notes.ENGINES",
    "tests.engines.COLLIDING",
    "tests.engines.PROBES",
    "tests.streaming_engines.ENGINES",
]
MCP_GATEWAY = {
    **MCP_GATEWAY,
    # A live server started with MCPGW_TEST_DRIFTING set also serves
    # tests.engines.Drifting, whose description is that variable's value.
    "ENGINES": [
        *MCP_GATEWAY_ENGINES,
        *(["tests.engines.DRIFTING"] if os.environ.get("MCPGW_TEST_DRIFTING") else []),
    ],
    "PUBLIC_BASE_URL": os.environ.get(
        "MCPGW_TEST_PUBLIC_BASE_URL", "http://testserver"
    ),
    # The tests' identity providers run on loopback; a live server started
    # with MCPGW_TEST_LOOPBACK_ISSUERS=0 applies the production rule.
    "ALLOW_INSECURE_LOOPBACK_ISSUERS": os.environ.get(
        "MCPGW_TEST_LOOPBACK_ISSUERS", "1"
    )
    == "1",
}
MCPGW_DRIFTING_DESCRIPTION = os.environ.get("MCPGW_TEST_DRIFTING", "Count words.")
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
# A live server on another address (a network namespace's) also allows it.
ALLOWED_HOSTS += [h for h in os.environ.get("MCPGW_TEST_HOSTS", "").split(",") if h]
if os.environ.get("MCPGW_TEST_LOOPBACK_ONLY") != "1":
    ALLOWED_HOSTS.append("testserver")  # Django's test client
SECRET_KEY = "tests-only-secret-key-not-for-deployment-0123456789abcdef"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# A file, not memory, so a live gunicorn/uvicorn server sees the test data.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": str(Path(tempfile.gettempdir()) / f"mcpgw-test-{os.getpid()}.sqlite3")
    }

# The suite drops its test database at the end, and pytest-django refuses
# database access outside tests marked for it: the pytest process and the
# live WSGI servers keep no connection past a request (an ASGI live server
# keeps the reference project's pool). The reference defaults themselves
# are tested in tests/test_reference_settings.py.
if DATABASES["default"].get("CONN_MAX_AGE") == 600:  # noqa: F405 - the default
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False  # noqa: F405
