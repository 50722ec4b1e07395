"""Staff work the admin in a real browser; an MCP client sees the result."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.live.servers import Server

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = re.compile(r"mcpgw_[0-9a-f]+_[A-Za-z0-9-]+")


class Steps:
    """The browser session: each step ends with a numbered screenshot."""

    def __init__(self, page: Any, server: Server, directory: Path) -> None:
        self.page = page
        self.url = server.url
        self.directory = directory
        self.count = 0
        page.set_default_timeout(10_000)

    def shot(self, name: str) -> None:
        self.count += 1
        path = self.directory / f"{self.count:02d}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)

    def go(self, path: str) -> None:
        self.page.goto(self.url + path)

    def log_in(self, username: str, password: str) -> None:
        self.go("/admin/login/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", password)
        self.page.click("input[type=submit]")
        self.page.wait_for_selector("#site-name")

    def create_tenant(self, slug: str, name: str) -> str:
        self.go("/admin/mcp_gateway/tenant/add/")
        self.page.fill("#id_slug", slug)
        self.page.fill("#id_name", name)
        self.page.click("input[name=_continue]")
        self.page.wait_for_url(re.compile(r"/tenant/\d+/change/"))
        return str(self.page.url)

    def expose(self, tenant_url: str, engine_id: str) -> None:
        self.page.goto(tenant_url)
        self.page.click("text=Expose an engine")
        self.page.select_option("#id_engine_id", engine_id)
        self.page.click("input[name=_save]")
        self.page.wait_for_load_state()

    def messages(self) -> list[str]:
        return [
            m.strip() for m in self.page.locator(".messagelist li").all_inner_texts()
        ]

    def exposed_tools(self, tenant_url: str) -> list[str]:
        self.page.goto(tenant_url)
        cells = self.page.locator("td.field-tool_name").all_inner_texts()
        return sorted(cell.strip() for cell in cells)

    def unexpose(self, tenant_url: str, tool: str) -> None:
        self.page.goto(tenant_url)
        row = self.page.locator("tr.has_original", has_text=tool)
        row.locator("a.inlineviewlink").click()
        self.page.click("a.deletelink")
        self.page.click("input[type=submit]")
        self.page.wait_for_load_state()

    def choose(self, field: str, text: str) -> None:
        """Pick ``text`` in an admin autocomplete (select2) field."""
        self.page.click(f".field-{field} .select2-selection")
        self.page.fill(".select2-container--open .select2-search__field", text)
        self.page.click(f".select2-results__option:text-is('{text}')")

    def issue_token(self, tenant: str, user: str, name: str) -> str:
        self.go("/admin/mcp_gateway/apitoken/add/")
        self.choose("tenant", tenant)
        self.choose("user", user)
        self.page.fill("#id_name", name)
        self.shot("token-form")
        self.page.click("input[name=_save]")
        self.page.wait_for_load_state()
        secret = str(self.page.input_value("#mcp-token"))
        assert SECRET.fullmatch(secret), secret
        assert not SECRET.search(" ".join(self.messages()))
        return secret


async def _list_tools(url: str, secret: str) -> list[str]:
    headers = {"Authorization": f"Bearer {secret}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return sorted(tool.name for tool in (await client.list_tools()).tools)


@pytest.fixture
def root(db: None) -> User:
    """A superuser, created before Playwright's event loop starts."""
    return User.objects.create_superuser("root", password="root-password")


def list_tools(url: str, secret: str) -> list[str]:
    """Run the SDK client in a thread: Playwright's loop holds this one."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return list(pool.submit(asyncio.run, _list_tools(url, secret)).result())


def test_staff_expose_unexpose_and_issue_a_token_in_the_admin(
    root, live_gunicorn, page, screenshots
):
    steps = Steps(page, live_gunicorn, screenshots)

    steps.log_in("root", "root-password")
    steps.shot("logged-in")
    tenant_url = steps.create_tenant("acme", "Acme")
    steps.shot("tenant-created")
    steps.expose(tenant_url, "demo.echo")
    steps.expose(tenant_url, "demo.add")
    assert steps.exposed_tools(tenant_url) == ["demo_add", "demo_echo"]
    steps.shot("two-exposed")

    steps.expose(tenant_url, "demo:echo")
    collision = " ".join(steps.messages())
    steps.shot("collision")
    assert "'demo:echo'" in collision
    assert "'demo.echo'" in collision
    assert "both derive the tool name 'demo_echo'" in collision

    steps.unexpose(tenant_url, "demo_add")
    steps.shot("unexposed")
    assert steps.exposed_tools(tenant_url) == ["demo_echo"]
    steps.shot("one-left")

    secret = steps.issue_token("acme", "root", "browser")
    steps.shot("token-secret-shown")
    page.click("text=Done")
    page.wait_for_load_state()
    assert secret not in page.content()
    steps.page.goto(page.url)
    steps.shot("token-secret-gone")
    assert not SECRET.search(page.content())

    tools = list_tools(f"{live_gunicorn.url}/t/acme/mcp", secret)

    assert tools == ["demo_echo"]
