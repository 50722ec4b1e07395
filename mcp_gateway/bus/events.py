"""What travels on the bus: small JSON references, never content."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_PAYLOAD_BYTES = 7999
"""PostgreSQL's NOTIFY takes payloads shorter than 8,000 bytes; every backend
keeps to that, so a deployment can change backends without surprises."""


class PayloadTooLarge(ValueError):
    """A payload over ``MAX_PAYLOAD_BYTES`` once encoded."""

    def __init__(self, size: int) -> None:
        super().__init__(
            f"A bus payload is {size:,} bytes once encoded; the limit is "
            f"{MAX_PAYLOAD_BYTES:,} (PostgreSQL NOTIFY). Put the content in "
            "the shared cache and send its key."
        )
        self.size = size


class PrincipalKind(enum.StrEnum):
    """What changed about a principal; consumers treat unknown kinds alike."""

    TOKEN_REVOKED = "token_revoked"  # noqa: S105 - a name, not a secret
    TOKEN_DELETED = "token_deleted"  # noqa: S105
    USER_DEACTIVATED = "user_deactivated"
    USER_GROUPS_CHANGED = "user_groups_changed"
    USER_DELETED = "user_deleted"
    MEMBERSHIP_CHANGED = "membership_changed"
    MEMBERSHIP_REMOVED = "membership_removed"
    TENANT_DISABLED = "tenant_disabled"
    TENANT_ENABLED = "tenant_enabled"
    TENANT_CHANGED = "tenant_changed"  # its settings: limits, origins, audit
    TENANT_DELETED = "tenant_deleted"


@dataclass(frozen=True, slots=True)
class CatalogChanged:
    """A tenant's catalog is now at ``version``: re-read it."""

    tenant: int
    version: int


@dataclass(frozen=True, slots=True)
class PrincipalChanged:
    """Who may call changed: drop what is cached for these references.

    ``kind`` is a ``PrincipalKind`` value, kept a plain string so that an
    older process still delivers a kind a newer one publishes. ``user`` is
    the user's primary key (a string when it is not an integer); ``token``
    is an API token's public prefix.
    """

    kind: str
    tenant: int | None = None
    user: int | str | None = None
    token: str | None = None


@dataclass(frozen=True, slots=True)
class SecretsChanged:
    """The secrets of one engine of a tenant changed: re-read them.

    A reference only (the tenant's primary key and the engine id), never a
    name or a value.
    """

    tenant: int
    engine: str


@dataclass(frozen=True, slots=True)
class Message:
    """A point-to-point message; ``sender`` is the process to reply to."""

    sender: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Resync:
    """The bus was not listening for a while: events may have been missed."""


Event = CatalogChanged | PrincipalChanged | SecretsChanged | Message | Resync


def encode(value: Mapping[str, Any]) -> str:
    """Encode a payload as compact JSON within ``MAX_PAYLOAD_BYTES``.

    Raises:
        PayloadTooLarge: the encoded payload is over the limit.
        ValueError, TypeError: the value is not plain JSON.
    """
    text = json.dumps(
        dict(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    size = len(text.encode("utf-8"))
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadTooLarge(size)
    return text


def catalog_payload(event: CatalogChanged) -> dict[str, Any]:
    return {"tenant": event.tenant, "version": event.version}


def principal_payload(event: PrincipalChanged) -> dict[str, Any]:
    payload: dict[str, Any] = {"kind": str(event.kind)}
    for name in ("tenant", "user", "token"):
        if (value := getattr(event, name)) is not None:
            payload[name] = value
    return payload


def decode_catalog(data: Mapping[str, Any]) -> CatalogChanged:
    return CatalogChanged(tenant=_int(data["tenant"]), version=_int(data["version"]))


def secrets_payload(event: SecretsChanged) -> dict[str, Any]:
    return {"tenant": event.tenant, "engine": event.engine}


def decode_secrets(data: Mapping[str, Any]) -> SecretsChanged:
    return SecretsChanged(tenant=_int(data["tenant"]), engine=_str(data["engine"]))


def decode_principal(data: Mapping[str, Any]) -> PrincipalChanged:
    user = data.get("user")
    if user is not None and not isinstance(user, int | str):
        raise ValueError("bad user reference")
    token = data.get("token")
    if token is not None and not isinstance(token, str):
        raise ValueError("bad token reference")
    tenant = data.get("tenant")
    return PrincipalChanged(
        kind=_str(data["kind"]),
        tenant=None if tenant is None else _int(tenant),
        user=user,
        token=token,
    )


def decode_message(data: Mapping[str, Any]) -> Message:
    body = data["data"]
    if not isinstance(body, dict):
        raise ValueError("a message's data is a JSON object")
    return Message(sender=_str(data["from"]), data=body)


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("an integer reference was expected")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("a string was expected")
    return value
