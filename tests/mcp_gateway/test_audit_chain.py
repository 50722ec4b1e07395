"""The audit chain over HTTP: calls land unsealed, ``mcp_audit seal`` chains
them, ``mcp_audit verify`` finds the first tampered, deleted or reordered
row, pruning keeps the chain verifiable, and the stream carries each hash."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from mcp_gateway import bookkeeping
from mcp_gateway.audit.models import ChainHead, ExposureEvent, ToolCall
from mcp_gateway.audit_chain import seal, verify
from mcp_gateway.models import Tenant
from tests.rpc import post_rpc


@pytest.fixture
def calls(client: Client, tenant: Tenant, token: str) -> list[ToolCall]:
    """Five calls of acme, unsealed."""
    bookkeeping.expose(tenant, "demo.echo")
    for n in range(5):
        response = post_rpc(
            client,
            token,
            "tools/call",
            {"name": "demo_echo", "arguments": {"text": f"call {n}"}},
        )
        assert response.status_code == 200
    return list(ToolCall.objects.order_by("pk"))


def audit(*args: str) -> str:
    out = StringIO()
    call_command("mcp_audit", *args, stdout=out)
    return out.getvalue()


def broken(*args: str) -> str:
    out = StringIO()
    with pytest.raises(CommandError, match="broken"):
        call_command("mcp_audit", "verify", *args, stdout=out)
    return out.getvalue()


def test_calls_land_unsealed_and_are_reported_pending_not_broken(calls):
    assert all(row.chain_seq is None for row in calls)

    text = audit("verify", "--tenant", "acme")

    assert "acme tool calls: 0 sealed rows verified, 5 pending." in text


def test_sealing_chains_each_tenants_rows_in_id_order(calls):
    text = audit("seal")

    sealed = list(ToolCall.objects.order_by("pk"))
    assert "Sealed 6 rows." in text  # five calls and the exposure change
    assert [row.chain_seq for row in sealed] == [1, 2, 3, 4, 5]
    assert len({row.chain_hash for row in sealed}) == 5
    head = ChainHead.objects.get(tenant_slug="acme", kind="call")
    assert (head.last_seq, head.last_id, head.last_hash) == (
        5,
        sealed[-1].pk,
        sealed[-1].chain_hash,
    )
    assert "acme tool calls: 5 sealed rows verified." in audit("verify")
    assert "acme exposure changes: 1 sealed rows verified." in audit("verify")


def test_sealing_again_seals_only_new_rows(calls, client, token):
    audit("seal")
    post_rpc(client, token, "tools/call", {"name": "demo_echo", "arguments": {}})

    assert "Sealed 1 row." in audit("seal")
    assert [r.chain_seq for r in ToolCall.objects.order_by("pk")] == [1, 2, 3, 4, 5, 6]
    assert verify.verify("acme")[0].ok


def test_a_row_committed_late_with_a_lower_id_joins_the_chain_after_the_head(calls):
    late = calls[1]
    # As if the second row's transaction had committed after sealing ran:
    seal.seal()
    ToolCall.objects.filter(pk=late.pk).update(chain_seq=None, chain_hash="")
    others = ToolCall.objects.exclude(pk=late.pk).order_by("pk")
    _rechain(list(others))

    assert "Sealed 1 row." in audit("seal", "--tenant", "acme")
    assert ToolCall.objects.get(pk=late.pk).chain_seq == 5
    assert verify.verify("acme")[0].ok


def _rechain(rows: list[ToolCall]) -> None:
    """Chain ``rows`` from scratch, as a sealer that never saw the others."""
    from mcp_gateway.audit_chain import hashing

    previous = ""
    for seq, row in enumerate(rows, start=1):
        digest = hashing.row_hash(previous, "call", row, seq)
        ToolCall.objects.filter(pk=row.pk).update(chain_seq=seq, chain_hash=digest)
        previous = digest
    ChainHead.objects.filter(tenant_slug="acme", kind="call").update(
        last_seq=len(rows), last_id=rows[-1].pk, last_hash=previous
    )


def test_verify_reports_an_altered_row(calls):
    audit("seal")
    ToolCall.objects.filter(pk=calls[2].pk).update(outcome="denied")

    text = broken("--tenant", "acme")

    assert f"BROKEN: row {calls[2].pk} (position 3) does not match its hash" in text


def test_verify_reports_a_deleted_row(calls):
    audit("seal")
    ToolCall.objects.filter(pk=calls[1].pk).delete()

    text = broken()

    assert f"position 2 is missing before row {calls[2].pk}" in text


def test_verify_reports_reordered_rows(calls):
    audit("seal")
    ToolCall.objects.filter(pk=calls[1].pk).update(chain_seq=999)
    ToolCall.objects.filter(pk=calls[3].pk).update(chain_seq=2)
    ToolCall.objects.filter(pk=calls[1].pk).update(chain_seq=4)

    text = broken()

    assert f"row {calls[3].pk} (position 2) does not match its hash" in text


def test_verify_reports_rows_deleted_from_the_end(calls):
    audit("seal")
    ToolCall.objects.filter(pk__in=[calls[3].pk, calls[4].pk]).delete()

    text = broken()

    assert "the chain ends at position 3 but its head records 5" in text


def test_a_rewritten_head_fails_its_signature(calls, settings):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_ANCHOR_KEY": "k" * 32}
    audit("seal")
    last = ToolCall.objects.get(pk=calls[4].pk)
    ToolCall.objects.filter(pk=last.pk).delete()
    ChainHead.objects.filter(tenant_slug="acme", kind="call").update(
        last_seq=4,
        last_id=calls[3].pk,
        last_hash=ToolCall.objects.get(pk=calls[3].pk).chain_hash,
    )

    text = broken()

    assert "signature does not match AUDIT_ANCHOR_KEY" in text


def test_another_tenants_chain_stays_whole_when_one_breaks(calls, other_tenant, client):
    ToolCall.objects.create(tenant=other_tenant, tenant_slug="globex", outcome="ok")
    audit("seal")
    ToolCall.objects.filter(pk=calls[0].pk).update(user="mallory")

    text = broken()

    assert "globex tool calls: 1 sealed rows verified." in text
    assert "acme tool calls: BROKEN" in text


def test_prune_keeps_the_chain_verifiable(calls):
    old = timezone.now() - timedelta(days=40)
    ToolCall.objects.filter(pk__in=[c.pk for c in calls[:3]]).update(created_at=old)

    text = audit("prune", "--older-than", "30")

    assert "Deleted 3 tool calls" in text
    head = ChainHead.objects.get(tenant_slug="acme", kind="call")
    assert head.anchor_seq == 3
    assert "acme tool calls: 2 sealed rows verified." in audit("verify")


def test_prune_then_deleting_the_first_kept_row_is_still_reported(calls):
    old = timezone.now() - timedelta(days=40)
    ToolCall.objects.filter(pk__in=[c.pk for c in calls[:2]]).update(created_at=old)
    audit("prune", "--older-than", "30")
    ToolCall.objects.filter(pk=calls[2].pk).delete()

    assert "position 3 is missing" in broken()


def test_exposure_changes_are_chained_too(tenant):
    bookkeeping.expose(tenant, "demo.echo")
    bookkeeping.unexpose(tenant, "demo.echo")
    seal.seal()
    ExposureEvent.objects.filter(action="unexpose").update(actor_name="someone")

    assert "acme exposure changes: BROKEN" in broken()


def test_the_stream_carries_each_sealed_row_with_its_chain_hash(
    calls, settings, tmp_path
):
    path = tmp_path / "audit.jsonl"
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_STREAM": str(path)}

    audit("seal")

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    rows = {row.pk: row for row in ToolCall.objects.all()}
    calls_streamed = [d for d in lines if d["mcp_gateway"]["kind"] == "call"]
    assert len(calls_streamed) == 5
    first = calls_streamed[0]
    row = rows[int(first["event"]["id"])]
    assert first["event"]["hash"] == row.chain_hash
    assert first["event"]["sequence"] == row.chain_seq == 1
    assert first["mcp_gateway"]["chain"]["previous"] == ""
    assert calls_streamed[1]["mcp_gateway"]["chain"]["previous"] == row.chain_hash
    assert first["event"]["action"] == "tools/call"
    assert first["event"]["outcome"] == "success"
    assert first["organization"]["name"] == "acme"
    assert first["user"]["name"] == "alice"
    assert first["mcp_gateway"]["tool"] == "demo_echo"
    assert first["@timestamp"].endswith("Z")
    assert first["ecs"]["version"]


def test_the_stream_may_go_to_stdout(calls, settings, capsys):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "AUDIT_STREAM": "stdout"}

    seal.seal()

    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [
        d["event"]["sequence"] for d in printed if d["mcp_gateway"]["kind"] == "call"
    ] == [
        1,
        2,
        3,
        4,
        5,
    ]


def test_verify_of_an_unknown_tenant_is_an_error(db):
    with pytest.raises(CommandError, match="No audit rows"):
        audit("verify", "--tenant", "nobody")


def test_the_calls_own_audit_write_is_still_one_insert(
    principal_cache, client, tenant, token, django_assert_num_queries
):
    bookkeeping.expose(tenant, "demo.echo")
    params: dict[str, Any] = {"name": "demo_echo", "arguments": {"text": "x"}}
    post_rpc(client, token, "tools/call", params)

    with django_assert_num_queries(1) as captured:  # the insert (principal kept)
        post_rpc(client, token, "tools/call", params)

    assert [q["sql"].split()[0] for q in captured.captured_queries][-1] == "INSERT"
