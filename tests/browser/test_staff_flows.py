"""What staff come for, in a real browser: the Engines page, exposing, a
changed tool held until approved, the tenant page's chart, the one-time
token page. Each step is saved at 1280 px and at 390 px wide.

The drifting engine (tests.engines.Drifting) takes its description from
``MCPGW_TEST_DRIFTING``: the server is restarted with a new value, as a
deploy of new engine code would.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_gateway.audit.models import ExposureEvent
from mcp_gateway.models import Exposure, Tenant
from tests.browser.conftest import BROWSER_THREADS, CHROMIUM_ARGS
from tests.live.servers import Server, database_url, free_port, running

pytestmark = pytest.mark.django_db(transaction=True)

OLD = "Count words."
NEW = "Count words. Now also deletes files."
SECRET = re.compile(r"mcpgw_[0-9a-f]+_[A-Za-z0-9-]+")
WIDE, NARROW = 1280, 390
# What a strict deployment sends: no inline script may run.
CSP = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'self'"


class Walk:
    """One browser session; each step ends with a screenshot at both widths."""

    def __init__(self, page: Any, url: str, directory: Path) -> None:
        self.page = page
        self.url = url
        self.directory = directory
        self.count = 0
        self.shots: list[str] = []
        page.set_default_timeout(15_000)

    def shot(self, name: str) -> None:
        self.count += 1
        for width in (WIDE, NARROW):
            self.page.set_viewport_size({"width": width, "height": 900})
            path = self.directory / f"{self.count:02d}-{name}-{width}.png"
            self.page.screenshot(path=str(path), full_page=True)
            self.shots.append(path.name)
        self.page.set_viewport_size({"width": WIDE, "height": 900})

    def go(self, path: str) -> None:
        self.page.goto(self.url + path)

    def messages(self) -> list[str]:
        texts = self.page.locator(".messagelist li").all_inner_texts()
        return [m.strip() for m in texts]

    def choose(self, field: str, text: str) -> None:
        """Pick ``text`` in an admin autocomplete (select2) field."""
        self.page.click(f".field-{field} .select2-selection")
        self.page.fill(".select2-container--open .select2-search__field", text)
        self.page.click(f".select2-results__option:text-is('{text}')")


async def _tools(url: str, secret: str) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {secret}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        listed = (await client.list_tools()).tools
        return {tool.name: tool.description or "" for tool in listed}


def tools(url: str, secret: str) -> dict[str, str]:
    """Run the SDK client in a thread: Playwright's loop holds this one."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return dict(pool.submit(asyncio.run, _tools(url, secret)).result())


class Deployment:
    """gunicorn on one port, restarted with other engine code on demand."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.db_url = database_url(connection.settings_dict)
        self.stack = ExitStack()
        self.server: Server | None = None
        self.runs = 0

    def deploy(self, description: str) -> Server:
        self.stack.close()
        self.stack = ExitStack()
        self.runs += 1
        tmp = self.tmp / f"run-{self.runs}"
        tmp.mkdir()
        self.server = self.stack.enter_context(
            running(
                "gunicorn",
                self.db_url,
                tmp,
                port=self.port,
                MCPGW_GUNICORN_THREADS=BROWSER_THREADS,
                DEBUG="1",
                MCPGW_TEST_DRIFTING=description,
            )
        )
        return self.server

    def close(self) -> None:
        self.stack.close()


@pytest.fixture
def deployment(django_db_setup: None, tmp_path: Path) -> Iterator[Deployment]:
    live = Deployment(tmp_path)
    yield live
    live.close()


@pytest.fixture
def root(db: None) -> User:
    return User.objects.create_superuser("root", password="root-password")


@pytest.fixture
def browser_page(chromium: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A page whose every response carries a strict Content-Security-Policy;
    violations are collected on ``page.csp_violations``."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's
    # own ORM reads and writes between steps are still plain sync code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium), args=CHROMIUM_ARGS
        )
        try:
            context = browser.new_context(viewport={"width": WIDE, "height": 900})
            context.grant_permissions(["clipboard-read", "clipboard-write"])

            def strict(route: Any) -> None:
                response = route.fetch()
                headers = {**response.headers, "content-security-policy": CSP}
                route.fulfill(response=response, headers=headers)

            context.route("**/admin/**", strict)
            page = context.new_page()
            violations: list[str] = []
            page.on(
                "console",
                lambda m: (
                    violations.append(m.text)
                    if "Content Security Policy" in m.text
                    else None
                ),
            )
            page.csp_violations = violations  # type: ignore[attr-defined]
            yield page
        finally:
            browser.close()
            # The test's ORM calls ran while Playwright's loop was running,
            # on connections of that context: close them here, or the test
            # database (PostgreSQL) cannot be dropped at the end.
            connections.close_all()


def bar_widths(page: Any) -> list[float]:
    return list(
        page.eval_on_selector_all(
            ".mcp-calls-chart meter",
            "els => els.map(e => e.getBoundingClientRect().width)",
        )
    )


def test_staff_walk_expose_drift_hold_approve_and_tokens(
    root, deployment, browser_page, screenshots
):
    page = browser_page
    server = deployment.deploy(OLD)
    walk = Walk(page, server.url, screenshots)
    Tenant.objects.create(slug="acme", name="Acme")

    # Log in, then the Engines page: every installed engine.
    walk.go("/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "root-password")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    walk.shot("logged-in")
    page.click("text=Installed engines")
    row = page.locator("tr.mcp-engine[data-engine='test.drifting']")
    assert "test_drifting" in row.inner_text()
    walk.shot("engines-page")

    # Expose the drifting engine to acme from its row.
    row.locator("a.mcp-expose").click()
    page.wait_for_selector("#id_engine_id")
    walk.choose("tenant", "acme")
    page.wait_for_url(re.compile(r"tenant=\d+"))
    assert page.input_value("#id_engine_id") == "test.drifting"
    walk.shot("expose-form")
    page.click("input[name=_save]")
    page.wait_for_load_state()
    assert Exposure.objects.filter(engine_id="test.drifting").exists()
    walk.shot("exposed")

    # A token: the secret once, in monospace, with a copy button and the
    # client configuration; never in a cookie or a message.
    walk.go("/admin/mcp_gateway/apitoken/add/")
    walk.choose("tenant", "acme")
    walk.choose("user", "root")
    page.fill("#id_name", "laptop")
    page.click("input[name=_save]")
    page.wait_for_selector("#mcp-token")
    secret = str(page.input_value("#mcp-token"))
    assert SECRET.fullmatch(secret), secret
    assert secret in page.input_value("#mcp-client-config")
    assert f"Authorization: Bearer {secret}" == page.input_value("#mcp-header")
    page.focus("button[data-mcp-copy='mcp-token']")
    page.keyboard.press("Enter")  # by keyboard, under the strict CSP
    page.wait_for_selector("#mcp-token-copied:text('Copied')")
    cookies = " ".join(c["value"] for c in page.context.cookies())
    assert secret not in cookies
    assert not SECRET.search(" ".join(walk.messages()))
    walk.shot("token-secret-once")
    page.click("text=Done")
    page.wait_for_load_state()
    assert secret not in page.content()

    mcp = f"{server.url}/t/acme/mcp"
    assert tools(mcp, secret) == {"test_drifting": OLD}

    # New engine code is deployed: the description changed.
    server = deployment.deploy(NEW)
    assert tools(mcp, secret) == {}  # held: the client no longer sees it

    walk.go("/admin/mcp_gateway/tenant/")
    assert "1 held" in page.locator("#result_list").inner_text()
    walk.shot("tenant-list-held")
    exposure = Exposure.objects.get(engine_id="test.drifting")
    walk.go(f"/admin/mcp_gateway/exposure/{exposure.pk}/change/")
    diff = page.locator(".mcp-diff").inner_text()
    assert OLD in diff
    assert NEW in diff
    assert "Held" in page.locator(".field-status").inner_text()
    walk.shot("exposure-held-diff")

    page.click("text=Approve changes")
    page.wait_for_selector(".mcp-approve")
    assert NEW in page.locator(".mcp-diff").inner_text()
    walk.shot("approve-confirmation")
    page.click("input[type=submit][value='Approve changes']")
    page.wait_for_load_state()
    assert "approved 1 changed tool(s): test_drifting" in " ".join(walk.messages())
    walk.shot("approved")
    assert tools(mcp, secret) == {"test_drifting": NEW}
    event = ExposureEvent.objects.filter(action="approve").get()
    assert (event.via, event.actor) == ("admin", root)

    # The tenant page: URL with a visible "copied", status, chart first.
    for _ in range(2):
        tools(mcp, secret)
    from mcp_gateway.audit.models import ToolCall

    ToolCall.objects.create(
        tenant=Tenant.objects.get(slug="acme"),
        tenant_slug="acme",
        tool_name="test_drifting",
        engine_id="test.drifting",
        outcome="ok",
    )
    ToolCall.objects.create(
        tenant=Tenant.objects.get(slug="acme"),
        tenant_slug="acme",
        tool_name="nope",
        outcome="invalid",
    )
    tenant = Tenant.objects.get(slug="acme")
    walk.go(f"/admin/mcp_gateway/tenant/{tenant.pk}/change/")
    page.click("button[data-mcp-copy='mcp-url']")
    page.wait_for_selector("#mcp-url-copied:text('Copied')")
    assert "served: 1" in page.locator(".mcp-summary").inner_text()
    for width in (WIDE, 1024, 768, NARROW):
        page.set_viewport_size({"width": width, "height": 900})
        widths = bar_widths(page)
        assert len(widths) == 1, widths  # "nope" is no tool of the tenant
        assert all(w > 0 for w in widths), (width, widths)
    page.set_viewport_size({"width": NARROW, "height": 900})
    assert page.locator(".mcp-summary").is_visible()
    page.set_viewport_size({"width": WIDE, "height": 900})
    walk.shot("tenant-page")
    page.click(".mcp-calls-chart a")
    page.wait_for_load_state()
    assert "test_drifting" in page.locator("#result_list").inner_text()
    walk.shot("calls-of-the-tool")

    # Revoke from the token page; revoking again says so.
    walk.go("/admin/mcp_gateway/apitoken/")
    page.click("#result_list a:text-matches('^[0-9a-f]+$')")
    page.click("text=Revoke this token")
    walk.shot("revoke-confirmation")
    page.click("input[value='Yes, revoke it']")
    page.wait_for_load_state()
    assert "Revoked 1 token(s)" in " ".join(walk.messages())
    walk.shot("token-revoked")

    assert page.csp_violations == []
    print("screenshots:", ", ".join(walk.shots))


def test_staff_hit_no_more_of_the_four_bugs(
    root, deployment, browser_page, screenshots
):
    page = browser_page
    server = deployment.deploy(OLD)
    walk = Walk(page, server.url, screenshots)
    acme = Tenant.objects.create(slug="acme", name="Acme")
    from mcp_gateway import bookkeeping

    bookkeeping.expose(acme, "demo.echo")
    walk.go("/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "root-password")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    # 2: Add without ?tenant, an engine the tenant exposes: a clear error,
    # and no other engine silently chosen.
    walk.go("/admin/mcp_gateway/exposure/add/")
    page.select_option("#id_engine_id", "demo.echo")
    walk.choose("tenant", "acme")
    page.wait_for_url(re.compile(r"tenant=\d+"))
    assert page.input_value("#id_engine_id") == ""  # demo.echo is not offered
    page.select_option("#id_engine_id", "demo.add")
    page.click("input[name=_save]")
    page.wait_for_load_state()
    assert sorted(acme.exposures.values_list("engine_id", flat=True)) == [
        "demo.add",
        "demo.echo",
    ]
    walk.go(f"/admin/mcp_gateway/exposure/add/?tenant={acme.pk}")
    assert page.input_value("#id_engine_id") == ""
    page.click("input[name=_save]")
    page.wait_for_load_state()
    assert "This field is required" in page.locator(".errorlist").inner_text()
    assert acme.exposures.count() == 2
    walk.shot("add-form-picks-nothing-by-itself")

    # 3: Expose all with colliding engines exposes the rest and says which not.
    walk.go("/admin/mcp_gateway/tenant/")
    page.check(f"input[name=_selected_action][value='{acme.pk}']")
    page.select_option("select[name=action]", "expose_all")
    page.click("button[name=index]")
    page.wait_for_load_state()
    said = " ".join(walk.messages()).lower()
    assert "skipped demo:echo" in said
    assert "acme: exposed " in said
    assert acme.exposures.filter(engine_id="demo.whoami").exists()
    walk.shot("expose-all-reports-skipped")

    # 4: the browsable API: the root and the engine list render.
    walk.go("/api/")
    assert "/api/tenants/{slug}/exposures/{engine_id}/approve/" in page.content()
    walk.shot("api-root")
    response = page.goto(f"{server.url}/api/engines/")
    assert response is not None
    assert response.status == 200
    assert "demo.echo" in page.content()
    walk.shot("api-engines")

    assert page.csp_violations == []
