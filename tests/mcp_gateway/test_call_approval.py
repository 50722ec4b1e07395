"""Staff-required confirmation of sensitive calls, over HTTP (Django's client).

An exposure marked "requires confirmation" never runs its engine before the
gateway asked: on 2026-07-28 with an ``InputRequiredResult`` bound to the
tenant, user, token, tool and arguments; on the 2025 wires without a
back-channel (a client that takes only JSON) it is refused; under
``CALL_APPROVAL = "staff"`` it is parked until staff approve it in the admin.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from io import StringIO
from typing import Any
from unittest import mock

import mcp_types as types
import pytest
from django.contrib.auth.models import User
from django.core.cache import caches
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from demo.models import Note
from engines_app.context import Principal
from mcp_gateway import bookkeeping, call_approvals, tokens
from mcp_gateway.audit import log as audit
from mcp_gateway.audit.models import ExposureEvent, ToolCall
from mcp_gateway.dispatch import approval
from mcp_gateway.models import ApiToken, CallApproval, Exposure, Membership, Tenant
from tests.rpc import post_rpc, result_of

MODERN = "2026-07-28"
ACCEPT = {"confirm": {"action": "accept", "content": {"confirm": True}}}
DECLINE = {"confirm": {"action": "decline"}}
ARGS = {"title": "groceries"}


@pytest.fixture
def exposed(tenant: Tenant) -> Exposure:
    bookkeeping.expose_many(tenant, ["demo.add_note", "demo.delete_note", "demo.echo"])
    exposure = Exposure.objects.get(tenant=tenant, engine_id="demo.add_note")
    return bookkeeping.require_confirmation(exposure, True)


@pytest.fixture
def bob(tenant: Tenant) -> str:
    user = User.objects.create_user("bob")
    Membership.objects.create(tenant=tenant, user=user)
    return tokens.issue(tenant, user).secret


def call(
    client: Client,
    token: str,
    tool: str = "demo_add_note",
    arguments: dict[str, Any] | None = None,
    *,
    version: str = MODERN,
    elicitation: bool = True,
    **retry: Any,
) -> Any:
    """POST a ``tools/call``; the 2026-07-28 envelope and headers when modern."""
    params: dict[str, Any] = {"name": tool, "arguments": arguments or ARGS}
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": version}
    if version == MODERN:
        capabilities: dict[str, Any] = (
            {"elicitation": {"form": {}}} if elicitation else {}
        )
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": tool}
    params.update(retry)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = client.post(
        "/t/acme/mcp",
        json.dumps(body),
        content_type="application/json",
        headers=headers,
    )
    return response.status_code, response.json()


def tool_error(answer: tuple[int, Any]) -> dict[str, Any]:
    result = result_of(answer)
    assert result["isError"] is True
    error: dict[str, Any] = json.loads(result["content"][0]["text"])
    return error


def asked(client: Client, token: str, arguments: dict[str, Any] | None = None) -> str:
    first = result_of(call(client, token, arguments=arguments))
    assert first["resultType"] == "input_required"
    state: str = first["requestState"]
    return state


def outcomes() -> list[str]:
    return list(ToolCall.objects.order_by("pk").values_list("outcome", flat=True))


def notes() -> list[str]:
    return list(Note.objects.values_list("title", flat=True))


def invalid_params(answer: tuple[int, Any]) -> bool:
    status, body = answer
    return status == 400 and body["error"]["code"] == -32602


# -- 2026-07-28: the gateway asks, showing the exact arguments ---------------------


def test_the_gateway_asks_before_the_engine_runs(client, token, exposed):
    first = result_of(call(client, token, arguments={"title": "x", "body": "y"}))

    elicit = first["inputRequests"]["confirm"]
    assert elicit["method"] == "elicitation/create"
    assert elicit["params"]["requestedSchema"]["required"] == ["confirm"]
    message = elicit["params"]["message"]
    assert "demo_add_note" in message
    assert json.dumps({"body": "y", "title": "x"}, indent=2) in message
    assert first["requestState"].startswith("v1.")
    assert '"title"' not in first["requestState"]  # sealed, not readable
    assert notes() == []
    assert outcomes() == ["awaiting"]


def test_the_confirmed_retry_runs_the_engine_with_its_arguments(client, token, exposed):
    state = asked(client, token)

    done = result_of(call(client, token, inputResponses=ACCEPT, requestState=state))

    assert done["isError"] is False
    assert done["structuredContent"]["title"] == "groceries"
    assert notes() == ["groceries"]
    assert outcomes() == ["awaiting", "confirmed", "ok"]


def test_a_confirmation_runs_its_call_once(client, token, exposed):
    state = asked(client, token)
    first = call(client, token, inputResponses=ACCEPT, requestState=state)

    again = [
        call(client, token, inputResponses=ACCEPT, requestState=state) for _ in range(2)
    ]

    assert result_of(first)["isError"] is False
    assert all(invalid_params(answer) for answer in again)
    assert notes() == ["groceries"]
    assert outcomes().count("ok") == 1
    assert outcomes().count("confirmed") == 1


def test_a_confirmation_that_cannot_be_recorded_is_refused(
    client, token, exposed, settings
):
    state = asked(client, token)
    dead = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
    }
    settings.CACHES = {**settings.CACHES, "dead": dead}
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "RATE_LIMIT_CACHE": "dead"}

    answer = call(client, token, inputResponses=ACCEPT, requestState=state)

    assert invalid_params(answer)
    assert notes() == []


def test_a_declined_confirmation_runs_nothing(client, token, exposed):
    state = asked(client, token)

    error = tool_error(call(client, token, inputResponses=DECLINE, requestState=state))

    assert error["code"] == "DECLINED"
    assert notes() == []
    assert outcomes() == ["awaiting", "declined"]


def test_an_accept_that_does_not_confirm_runs_nothing(client, token, exposed):
    state = asked(client, token)
    unticked = {"confirm": {"action": "accept", "content": {"confirm": False}}}

    error = tool_error(call(client, token, inputResponses=unticked, requestState=state))

    assert error["code"] == "DECLINED"
    assert notes() == []


@pytest.mark.parametrize(
    "replay",
    [
        {"arguments": {"title": "other"}},
        {"tool": "demo_echo", "arguments": {"text": "hi"}},
        {"token": "bob"},
        {"token": "alice-again"},
        {"requestState": "v1.forged"},
    ],
    ids=["other-arguments", "other-tool", "other-user", "other-token", "forged"],
)
def test_a_confirmation_is_never_replayed_for_another_call(
    client, token, bob, member, exposed, tenant, replay
):
    state = asked(client, token)
    secrets = {
        "bob": bob,
        "alice-again": tokens.issue(tenant, member).secret,
    }
    sent = secrets.get(replay.get("token", ""), token)
    retry = {
        "inputResponses": ACCEPT,
        "requestState": replay.get("requestState", state),
    }

    answer = call(
        client,
        sent,
        replay.get("tool", "demo_add_note"),
        replay.get("arguments", ARGS),
        **retry,
    )

    assert invalid_params(answer)
    assert notes() == []
    assert "confirmed" not in outcomes()


def test_an_expired_confirmation_is_refused_and_audited(
    client, token, exposed, settings
):
    state = asked(client, token)
    later = time.time() + 601

    with mock.patch("time.time", return_value=later):
        answer = call(client, token, inputResponses=ACCEPT, requestState=state)

    assert invalid_params(answer)
    assert notes() == []
    assert outcomes() == ["awaiting", "expired"]


def test_answers_without_the_gateways_state_are_ignored(client, token, exposed):
    status, body = call(client, token, inputResponses=ACCEPT)

    assert status == 200
    assert body["result"]["resultType"] == "input_required"
    assert list(body["result"]["inputRequests"]) == ["confirm"]
    assert notes() == []
    assert outcomes() == ["awaiting"]


def test_a_modern_client_without_elicitation_is_refused(client, token, exposed):
    error = tool_error(call(client, token, elicitation=False))

    assert error["code"] == "CONFIRMATION_REQUIRED"
    assert "This tool needs confirmation" in error["message"]
    assert notes() == []
    assert outcomes() == ["unconfirmed"]


def test_an_engine_that_asks_too_is_asked_after_the_gateway(client, token, exposed):
    exposure = Exposure.objects.get(engine_id="demo.delete_note")
    bookkeeping.require_confirmation(exposure, True)
    note = Note.objects.create(tenant=exposure.tenant, title="old")
    arguments = {"id": note.pk}
    first = result_of(call(client, token, "demo_delete_note", arguments))
    engine_asks = result_of(
        call(
            client,
            token,
            "demo_delete_note",
            arguments,
            inputResponses=ACCEPT,
            requestState=first["requestState"],
        )
    )
    assert list(engine_asks["inputRequests"]) == ["input"]
    assert Note.objects.filter(pk=note.pk).exists()

    done = result_of(
        call(
            client,
            token,
            "demo_delete_note",
            arguments,
            inputResponses={"input": ACCEPT["confirm"]},
            requestState=engine_asks["requestState"],
        )
    )

    assert done["structuredContent"] == {"id": note.pk, "deleted": True}
    assert not Note.objects.filter(pk=note.pk).exists()


def test_the_question_gives_its_quota_unit_back(client, token, exposed, tenant):
    caches["default"].clear()
    Tenant.objects.filter(pk=tenant.pk).update(calls_per_day=1)
    state = asked(client, token)

    done = result_of(call(client, token, inputResponses=ACCEPT, requestState=state))
    status, over = call(client, token)

    assert done["isError"] is False
    assert status == 429
    assert over["error"]["data"]["code"] == "QUOTA"
    assert notes() == ["groceries"]


def test_a_tool_without_the_mark_runs_at_once(client, token, exposed):
    done = result_of(call(client, token, "demo_echo", {"text": "hi"}))

    assert done["isError"] is False
    assert outcomes() == ["ok"]


# -- The 2025 wires: no back-channel for a JSON-only client, so refused ------------


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_on_a_2025_wire_without_a_back_channel_the_call_is_refused(
    client, token, exposed, version
):
    response = post_rpc(
        client,
        token,
        "tools/call",
        {"name": "demo_add_note", "arguments": ARGS},
        version=version,
    )

    error = tool_error((response.status_code, response.json()))
    assert error["code"] == "CONFIRMATION_REQUIRED"
    assert error["message"].startswith("This tool needs confirmation")
    assert notes() == []
    assert outcomes() == ["unconfirmed"]


@pytest.mark.parametrize(
    ("action", "ran", "recorded"),
    [("accept", ["groceries"], ["confirmed", "ok"]), ("decline", [], ["declined"])],
)
def test_a_back_channel_plugged_into_the_seam_decides_the_2025_call(
    client, token, exposed, monkeypatch, action, ran, recorded
):
    """The contract a 2025 back-channel keeps: show :func:`question`, return
    :func:`answered` of the reply."""
    shown: list[str] = []

    async def ask(ctx: Any, scope: Any, entry: Any, arguments: Any) -> Any:
        asked = approval.question(scope, entry, arguments).model_dump(by_alias=True)
        shown.append(asked["inputRequests"]["confirm"]["params"]["message"])
        reply = types.ElicitResult.model_validate(
            {"action": action, "content": {"confirm": True}}
        )
        return await approval.answered(scope, reply)

    monkeypatch.setattr(approval, "ask_on_2025", ask)

    call(client, token, version="2025-11-25")

    assert notes() == ran
    assert outcomes() == recorded
    assert json.dumps(ARGS, indent=2) in shown[0]


# -- CALL_APPROVAL = "staff": parked, approved in the admin, run once --------------


@pytest.fixture
def staff_mode(settings: Any) -> None:
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "CALL_APPROVAL": "staff"}


def admin_decides(client: Client, action: str, *approvals: CallApproval) -> Any:
    root = User.objects.create_superuser(f"root-{action}")
    client.force_login(root)
    url = reverse("admin:mcp_gateway_callapproval_changelist")
    data = {"action": action, "_selected_action": [str(a.pk) for a in approvals]}
    response = client.post(url, data)
    client.logout()
    return response


def test_a_call_is_parked_until_staff_approve_then_runs_once(
    client, token, exposed, staff_mode
):
    first = tool_error(call(client, token, version="2025-11-25"))
    again = tool_error(call(client, token, version="2025-11-25"))
    parked = CallApproval.objects.get()

    assert first["code"] == again["code"] == "APPROVAL_PENDING"
    assert parked.state == "pending"
    assert parked.arguments == ARGS
    assert (parked.user, parked.tool_name) == ("alice", "demo_add_note")
    assert notes() == []

    assert admin_decides(client, "approve_selected", parked).status_code == 302
    ran = result_of(call(client, token, version="2025-11-25"))
    parked_again = tool_error(call(client, token, version="2025-11-25"))

    assert ran["isError"] is False
    assert notes() == ["groceries"]
    assert parked_again["code"] == "APPROVAL_PENDING"
    assert list(CallApproval.objects.values_list("state", flat=True)) == [
        "pending",
        "used",
    ]
    event = ExposureEvent.objects.get(action="approve_call")
    assert (event.engine_ids, event.actor_name) == (
        ["demo.add_note"],
        "root-approve_selected",
    )
    assert outcomes() == ["awaiting", "awaiting", "confirmed", "ok", "awaiting"]
    confirmed, run = ToolCall.objects.filter(outcome__in=["confirmed", "ok"]).order_by(
        "pk"
    )
    assert (confirmed.request_id, confirmed.user) == (run.request_id, run.user)


@pytest.mark.parametrize("audit_arguments", [False, True])
def test_a_parked_call_shows_staff_its_arguments_with_redacted_keys_masked(
    client, token, tenant, exposed, staff_mode, audit_arguments
):
    tenant.audit_arguments = audit_arguments
    tenant.audit_redacted_keys = ["TITLE"]
    tenant.save()

    tool_error(call(client, token, version="2025-11-25"))
    parked = CallApproval.objects.get()
    admin_decides(client, "approve_selected", parked)
    ran = result_of(call(client, token, version="2025-11-25"))

    assert parked.arguments == {"title": "[redacted]"}
    assert parked.arguments_hash == call_approvals.arguments_hash(ARGS)
    assert ran["isError"] is False
    assert notes() == ["groceries"]


def test_a_parked_call_is_bound_to_the_caller_as_its_audit_row_names_it(
    client, token, issued_token, exposed, staff_mode
):
    tool_error(call(client, token, version="2025-11-25"))

    parked, row = CallApproval.objects.get(), ToolCall.objects.get()
    assert (parked.user, parked.token_prefix) == (row.user, row.token_prefix)
    assert (parked.user, parked.token_prefix) == ("alice", issued_token.token.prefix)
    long = Principal(tenant="acme", user="u" * 200, token="t" * 40)
    assert audit.actor_of(long) == ("u" * 150, "t" * 16)


def test_mcp_audit_prune_deletes_old_parked_calls_that_can_decide_nothing(
    client, token, exposed, staff_mode
):
    for title in ("used", "denied", "expired", "late", "live", "new"):
        tool_error(call(client, token, arguments={"title": title}))
    rows = {row.arguments["title"]: row for row in CallApproval.objects.all()}
    for state in ("used", "denied", "expired"):
        CallApproval.objects.filter(pk=rows[state].pk).update(state=state)
    old = timezone.now() - timedelta(days=40)
    CallApproval.objects.exclude(pk=rows["new"].pk).update(created_at=old)
    CallApproval.objects.filter(pk=rows["late"].pk).update(expires_at=old)
    CallApproval.objects.filter(pk=rows["live"].pk).update(state="approved")
    out = StringIO()

    call_command("mcp_audit", "prune", "--older-than", "30", stdout=out)

    kept = CallApproval.objects.values_list("arguments__title", flat=True)
    assert sorted(kept) == ["live", "new"]
    assert "and 4 parked calls older than 30 days." in out.getvalue()


def test_an_approval_is_for_its_arguments_and_caller_only(
    client, token, bob, exposed, staff_mode
):
    tool_error(call(client, token, version="2025-11-25"))
    admin_decides(client, "approve_selected", CallApproval.objects.get())

    other_args = tool_error(
        call(client, token, arguments={"title": "x"}, version="2025-11-25")
    )
    other_user = tool_error(call(client, bob, version="2025-11-25"))

    assert other_args["code"] == other_user["code"] == "APPROVAL_PENDING"
    assert notes() == []
    assert CallApproval.objects.filter(state="approved").count() == 1


def test_of_two_calls_parked_at_once_staff_may_approve_either(
    client, token, exposed, staff_mode
):
    tool_error(call(client, token))
    first = CallApproval.objects.get()
    CallApproval.objects.create(  # a second worker parked the same call
        **{
            f.name: getattr(first, f.name)
            for f in CallApproval._meta.concrete_fields
            if f.name not in ("id", "created_at")
        }
    )
    admin_decides(client, "approve_selected", first)

    ran = result_of(call(client, token))

    assert ran["isError"] is False
    assert notes() == ["groceries"]


def test_a_denied_call_is_refused(client, token, exposed, staff_mode):
    tool_error(call(client, token))
    admin_decides(client, "deny_selected", CallApproval.objects.get())

    error = tool_error(call(client, token))

    assert error["code"] == "APPROVAL_DENIED"
    assert notes() == []
    assert ExposureEvent.objects.filter(action="deny_call").count() == 1
    assert outcomes() == ["awaiting", "declined"]


def test_an_approval_past_its_ttl_is_refused_and_audited(
    client, token, exposed, staff_mode
):
    tool_error(call(client, token))
    admin_decides(client, "approve_selected", CallApproval.objects.get())
    past = timezone.now() - timedelta(seconds=1)
    CallApproval.objects.update(expires_at=past)

    error = tool_error(call(client, token))

    assert error["code"] == "APPROVAL_EXPIRED"
    assert notes() == []
    assert CallApproval.objects.get().state == "expired"
    assert outcomes() == ["awaiting", "expired"]


def test_staff_cannot_approve_an_expired_call(client, token, exposed, staff_mode):
    tool_error(call(client, token))
    CallApproval.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    admin_decides(client, "approve_selected", CallApproval.objects.get())

    assert CallApproval.objects.get().state == "expired"
    assert not ExposureEvent.objects.filter(action="approve_call").exists()


# -- Staff set the mark: admin, API ------------------------------------------------


def test_the_mark_is_set_in_the_exposure_admin_and_audited(client, staff, tenant):
    exposure = bookkeeping.expose(tenant, "demo.echo")
    version = Tenant.objects.get().catalog_version
    client.force_login(staff)
    url = reverse("admin:mcp_gateway_exposure_change", args=[exposure.pk])

    response = client.post(url, {"requires_confirmation": "on"})
    listed = client.get(
        reverse("admin:mcp_gateway_exposure_changelist"),
        {"requires_confirmation__exact": "1"},
    )

    assert response.status_code == 302
    assert Exposure.objects.get().requires_confirmation is True
    assert Tenant.objects.get().catalog_version > version  # every worker sees it
    assert ExposureEvent.objects.filter(action="confirmation").count() == 1
    assert "demo_echo" in listed.content.decode()


def test_the_api_sets_and_shows_the_mark(staff, tenant):
    from rest_framework.test import APIClient

    bookkeeping.expose(tenant, "demo.echo")
    api = APIClient()
    api.force_authenticate(staff)
    url = "/api/tenants/acme/exposures/demo.echo/"

    patched = api.patch(url, {"requires_confirmation": True}, format="json")
    created = api.post(
        "/api/tenants/acme/exposures/",
        {"engine_id": "demo.add", "requires_confirmation": True},
        format="json",
    )

    assert patched.status_code == 200
    assert patched.json()["requires_confirmation"] is True
    assert created.status_code == 201
    assert created.json()["requires_confirmation"] is True
    assert sorted(
        Exposure.objects.filter(requires_confirmation=True).values_list(
            "engine_id", flat=True
        )
    ) == ["demo.add", "demo.echo"]


# -- Queries, pinned exactly (a warm catalog, a token used a moment ago) ----------


@pytest.fixture
def warm(client: Client, token: str, exposed: Exposure, tenant: Tenant) -> str:
    """demo.echo marked too; its catalog built; the token's use recorded."""
    echo = Exposure.objects.get(tenant=tenant, engine_id="demo.echo")
    bookkeeping.require_confirmation(echo, True)
    ApiToken.objects.update(last_used_at=timezone.now())
    call(client, token, "demo_echo", {"text": "warm"}, elicitation=False)
    return token


ECHO = {"text": "hi"}


def test_the_question_costs_the_principal_and_its_audit_row(
    client, warm, django_assert_num_queries
):
    with django_assert_num_queries(2) as captured:
        result_of(call(client, warm, "demo_echo", ECHO))

    assert captured.captured_queries[1]["sql"].startswith("INSERT")


def test_the_confirmed_run_costs_one_more_insert_its_confirmation(
    client, warm, django_assert_num_queries
):
    state = result_of(call(client, warm, "demo_echo", ECHO))["requestState"]

    with django_assert_num_queries(3) as captured:
        call(client, warm, "demo_echo", ECHO, inputResponses=ACCEPT, requestState=state)

    assert [q["sql"].split()[0] for q in captured.captured_queries[1:]] == [
        "INSERT",
        "INSERT",
    ]


def test_parking_and_the_approved_run_cost_a_lookup_and_a_write(
    client, warm, staff_mode, django_assert_num_queries
):
    with django_assert_num_queries(4):
        call(client, warm, "demo_echo", ECHO)  # look up, park, audit
    admin_decides(client, "approve_selected", CallApproval.objects.get())
    ApiToken.objects.update(last_used_at=timezone.now())

    with django_assert_num_queries(5) as captured:
        # look up, take, the confirmed row, the run's row
        ran = result_of(call(client, warm, "demo_echo", ECHO))

    assert ran["isError"] is False
    assert [q["sql"].split()[0] for q in captured.captured_queries[1:]] == [
        "SELECT",
        "UPDATE",
        "INSERT",
        "INSERT",
    ]


def test_the_admin_lists_a_call_past_its_expiry_as_expired(
    client, token, exposed, staff_mode
):
    tool_error(call(client, token))
    tool_error(call(client, token, arguments={"title": "fresh"}))
    CallApproval.objects.filter(arguments=ARGS).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    client.force_login(User.objects.create_superuser("root"))

    page = client.get(reverse("admin:mcp_gateway_callapproval_changelist"))
    shown = [
        row.split("</td>")[0]
        for row in page.content.decode().split('<td class="field-shown_state">')[1:]
    ]

    assert page.status_code == 200
    assert sorted(shown) == ["expired", "pending"]


def test_the_approval_page_shows_staff_the_exact_arguments(
    client, token, exposed, staff_mode
):
    tool_error(call(client, token, arguments={"title": "<b>x</b>", "body": "y"}))
    parked = CallApproval.objects.get()
    client.force_login(User.objects.create_superuser("root"))

    page = client.get(
        reverse("admin:mcp_gateway_callapproval_change", args=[parked.pk])
    ).content.decode()

    shown = json.dumps({"body": "y", "title": "<b>x</b>"}, indent=2)
    assert escape(shown) in page
    assert "<b>x</b>" not in page


def test_setting_the_mark_again_changes_nothing(tenant):
    exposure = bookkeeping.expose(tenant, "demo.echo")
    bookkeeping.require_confirmation(exposure, True, via="api")
    version = Tenant.objects.get().catalog_version

    bookkeeping.require_confirmation(exposure, True, via="api")
    bookkeeping.require_confirmation(exposure, False, via="api")

    assert Tenant.objects.get().catalog_version == version + 1
    changes = ExposureEvent.objects.filter(action="confirmation")
    assert list(changes.values_list("via", flat=True)) == ["api", "api"]
    assert Exposure.objects.get().requires_confirmation is False
