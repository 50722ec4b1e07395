"""The audit log's admin pages: time filters and times with seconds."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from mcp_gateway import bookkeeping
from mcp_gateway.audit.models import ExposureEvent, ToolCall
from mcp_gateway.models import Tenant

CHANGELIST = "admin:mcp_gateway_toolcall_changelist"


@pytest.fixture
def staff_client(client: Client, db: None) -> Client:
    staff = User.objects.create_superuser("root", password="root-password")
    client.force_login(staff, backend="django.contrib.auth.backends.ModelBackend")
    return client


@pytest.fixture
def calls(db: None) -> dict[str, ToolCall]:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    at = timezone.make_aware(datetime(2026, 11, 20, 12, 0, 0))

    def call(name: str, when: datetime) -> ToolCall:
        return ToolCall.objects.create(
            tenant=tenant,
            tenant_slug="acme",
            tool_name=name,
            outcome="ok",
            created_at=when,
        )

    return {
        "early": call("demo_early", at - timedelta(days=2)),
        "middle": call("demo_middle", at),
        "late": call("demo_late", at + timedelta(days=2)),
    }


def listed(response: Any) -> set[str]:
    return {row.tool_name for row in response.context["cl"].result_list}


def test_the_time_filter_offers_a_custom_range_as_a_plain_get_form(
    staff_client: Client, calls: dict[str, ToolCall]
) -> None:
    response = staff_client.get(reverse(CHANGELIST), {"outcome__exact": "ok"})
    html = response.content.decode()
    assert "Custom" in html
    form = html[html.index('class="mcp-period-custom"') :]
    form = form[: form.index("</form>")]
    assert 'name="created_at__gte"' in form
    assert 'name="created_at__lt"' in form
    assert '<input type="hidden" name="outcome__exact" value="ok">' in form
    assert "<script" not in form
    assert "onclick" not in form


def test_a_custom_range_filters_and_keeps_the_other_parameters(
    staff_client: Client, calls: dict[str, ToolCall]
) -> None:
    response = staff_client.get(
        reverse(CHANGELIST),
        {
            "created_at__gte": "2026-11-19T00:00:00",
            "created_at__lt": "2026-11-21T00:00",
            "outcome__exact": "ok",
        },
    )
    assert response.status_code == 200
    assert listed(response) == {"demo_middle"}
    assert 'value="2026-11-19T00:00:00"' in response.content.decode()
    only_start = staff_client.get(
        reverse(CHANGELIST), {"created_at__gte": "2026-11-19"}
    )
    assert listed(only_start) == {"demo_middle", "demo_late"}


def test_an_unreadable_range_is_a_message_and_filters_nothing(
    staff_client: Client, calls: dict[str, ToolCall]
) -> None:
    response = staff_client.get(
        reverse(CHANGELIST),
        {"created_at__gte": "yesterday", "created_at__lt": "2026-02-30"},
    )
    assert response.status_code == 200
    assert listed(response) == {"demo_early", "demo_middle", "demo_late"}
    messages = [str(m) for m in response.context["messages"]]
    assert any("Not a date and time" in m and "'yesterday'" in m for m in messages)
    assert "Traceback" not in response.content.decode()


def test_a_call_and_an_exposure_event_show_their_time_with_seconds(
    staff_client: Client, calls: dict[str, ToolCall]
) -> None:
    call = calls["middle"]
    ToolCall.objects.filter(pk=call.pk).update(
        created_at=timezone.make_aware(datetime(2026, 11, 20, 12, 0, 37))
    )
    bookkeeping.expose(Tenant.objects.get(slug="acme"), "demo.echo")
    event = ExposureEvent.objects.get()
    shown = timezone.localtime(event.created_at).strftime("%H:%M:%S")

    call_page = staff_client.get(
        reverse("admin:mcp_gateway_toolcall_change", args=[call.pk])
    ).content.decode()
    event_page = staff_client.get(
        reverse("admin:mcp_gateway_exposureevent_change", args=[event.pk])
    ).content.decode()

    assert "2026-11-20 12:00:37" in call_page
    assert shown in event_page
    assert "Created at" not in call_page
