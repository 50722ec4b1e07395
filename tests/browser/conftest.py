"""A real browser (Debian's Chromium, driven by Playwright) and a live server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.live.servers import Server, database_url, running

CHROMIUM = Path("/usr/bin/chromium")
# Chromium opens up to six connections per host, some idle (preconnects); a
# gthread worker gives each accepted connection a thread until it sends a
# request, so four threads can all wait on idle sockets while a page hangs.
BROWSER_THREADS = "16"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def chromium() -> Path:
    """The browser; its absence fails under MCPGW_REQUIRE_BROWSER, else skips."""
    if CHROMIUM.exists():
        return CHROMIUM
    reason = f"{CHROMIUM} is missing: apt-get install chromium"
    if os.environ.get("MCPGW_REQUIRE_BROWSER"):
        pytest.fail(f"{reason} (MCPGW_REQUIRE_BROWSER is set)")
    print(f"skipping the browser test: {reason}")
    pytest.skip(reason)


@pytest.fixture
def page(chromium: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium), args=CHROMIUM_ARGS
        )
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 900})
        finally:
            browser.close()


@pytest.fixture
def live_gunicorn(django_db_setup: None, tmp_path: Path) -> Iterator[Server]:
    """gunicorn against the test DB; DEBUG serves the admin's static files."""
    db_url = database_url(connection.settings_dict)
    with running(
        "gunicorn", db_url, tmp_path, MCPGW_GUNICORN_THREADS=BROWSER_THREADS, DEBUG="1"
    ) as server:
        yield server


@pytest.fixture
def screenshots(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """Where each step's screenshot goes: $MCPGW_ARTIFACTS or tmp_path."""
    base = Path(os.environ.get("MCPGW_ARTIFACTS") or tmp_path / "artifacts")
    directory = base / str(request.node.name)
    directory.mkdir(parents=True, exist_ok=True)
    print(f"screenshots: {directory}")
    return directory
