"""django-axes installed as its documentation says, against the MCP endpoint.

The site runs in a child process (its own settings: axes in
INSTALLED_APPS, its backend first, its middleware, lockout by address after
three failures); ``tests.axes_site.probe`` prints the status codes it saw.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def observed() -> dict[str, Any]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.axes_site.settings"}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.axes_site.probe"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_with_the_signal_bad_tokens_lock_the_address_out_of_mcp_and_admin(observed):
    seen = observed["signal_on"]

    assert seen["bad_tokens"] == [401, 401, 429]
    assert seen["good_token_after"] == 429
    assert seen["admin_login_after"] == 429


def test_without_the_signal_bad_tokens_count_for_nothing(observed):
    seen = observed["signal_off"]

    assert seen["bad_tokens"] == [401, 401, 401]
    assert seen["good_token_after"] == 200
    assert seen["admin_login_after"] == 302


def test_without_the_signal_an_address_locked_out_elsewhere_gets_401_on_mcp(
    observed,
):
    """Axes' backend still refuses the locked-out address (first in the
    list); without the signal nothing tells its middleware, so the answer is
    the endpoint's own 401, even for a valid token."""
    seen = observed["signal_off_locked_by_admin"]

    assert seen["bad_admin_logins"] == [200, 200, 429]
    assert seen["good_token_after"] == 401
