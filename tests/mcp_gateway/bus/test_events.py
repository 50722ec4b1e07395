"""Payloads: small JSON, at most 7,999 bytes, decoded defensively."""

from __future__ import annotations

import json
import logging

import pytest

from mcp_gateway import bus
from mcp_gateway.bus import events, process


def test_a_payload_of_7999_bytes_is_accepted_and_8000_refused():
    base = len(events.encode({"k": ""}).encode())

    assert len(events.encode({"k": "a" * (7999 - base)}).encode()) == 7999
    with pytest.raises(bus.PayloadTooLarge, match=r"8,000 bytes.*limit is 7,999"):
        events.encode({"k": "a" * (8000 - base)})


def test_the_limit_counts_bytes_not_characters():
    with pytest.raises(bus.PayloadTooLarge) as raised:
        events.encode({"k": "é" * 4000})

    assert raised.value.size == len(
        json.dumps(
            {"k": "é" * 4000}, ensure_ascii=False, separators=(",", ":")
        ).encode()
    )


def test_the_error_says_where_content_belongs():
    with pytest.raises(bus.PayloadTooLarge, match="shared cache and send its key"):
        events.encode({"k": "a" * 9000})


def test_not_plain_json_is_refused():
    with pytest.raises(ValueError, match="Out of range float"):
        events.encode({"k": float("nan")})
    with pytest.raises(TypeError):
        events.encode({"k": object()})


def test_a_too_large_message_is_refused_before_anything_is_sent(settings, fresh_bus):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}

    with pytest.raises(bus.PayloadTooLarge):
        bus.send(bus.process_id(), {"content": "x" * 8000})

    assert bus.stats().published == 0


def test_principal_events_carry_only_references():
    event = bus.PrincipalChanged(
        bus.PrincipalKind.TOKEN_REVOKED, tenant=3, user=7, token="ab12cd34ef56"
    )

    assert events.encode(events.principal_payload(event)) == (
        '{"kind":"token_revoked","tenant":3,"user":7,"token":"ab12cd34ef56"}'
    )
    assert (
        events.decode_principal(
            json.loads(events.encode(events.principal_payload(event)))
        )
        == event
    )


def test_an_unknown_kind_from_a_newer_process_is_still_delivered():
    assert events.decode_principal({"kind": "token_rotated", "token": "x"}) == (
        bus.PrincipalChanged("token_rotated", token="x")
    )


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        "[]",
        '{"tenant": 1}',
        '{"tenant": "1", "version": 2}',
        '{"tenant": true, "version": 2}',
    ],
)
def test_a_malformed_message_is_ignored_and_counted(
    settings, fresh_bus, caplog, payload
):
    settings.MCP_GATEWAY = {**settings.MCP_GATEWAY, "BUS": "local"}
    current = process.current()
    heard: list[bus.Event] = []
    current.subscribe(bus.CatalogChanged, heard.append)

    with caplog.at_level(logging.WARNING, "mcp_gateway.bus"):
        current.received(current.transport.channel("catalog"), payload)

    assert [e for e in heard if not isinstance(e, bus.Resync)] == []
    assert current.stats().failures == 1
    assert "ignored a malformed message" in caplog.text
