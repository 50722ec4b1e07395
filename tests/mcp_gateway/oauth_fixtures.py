"""Fixtures of the OAuth unit tests: an identity provider behind a fake fetch."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.cache import cache

from mcp_gateway.models import AuthorizationServer, Tenant
from mcp_gateway.oauth import fetch
from tests.oauth_keys import PrivateKey, claims, mint, new_key, public_jwk

ISSUER = "https://idp.example"
JWKS_URI = "https://idp.example/jwks"
RESOURCE = "http://testserver/t/acme/mcp"
KID = "k1"


@dataclass
class FakeIdp:
    """An issuer's key set, served to the gateway through ``fetch``."""

    key: PrivateKey = field(default_factory=new_key)
    fetched: list[str] = field(default_factory=list)
    down: bool = False
    keys: list[dict[str, Any]] = field(default_factory=list)
    introspection: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.keys = [public_jwk(self.key, KID)]

    def token(self, subject: str = "alice", **extra: Any) -> str:
        return mint(self.key, KID, claims(ISSUER, RESOURCE, subject, **extra))

    def get_json(self, url: str) -> dict[str, Any]:
        self.fetched.append(url)
        if self.down:
            raise fetch.AuthUnavailable(url)
        return {"keys": self.keys}

    def post_form(
        self, url: str, data: dict[str, str], auth: tuple[str, str]
    ) -> dict[str, Any]:
        self.fetched.append(url)
        if self.down:
            raise fetch.AuthUnavailable(url)
        return dict(self.introspection.get(data["token"], {"active": False}))


@pytest.fixture
def idp(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeIdp]:
    cache.clear()
    fake = FakeIdp()
    monkeypatch.setattr(fetch, "get_json", fake.get_json)
    monkeypatch.setattr(fetch, "post_form", fake.post_form)
    yield fake
    cache.clear()


@pytest.fixture
def jwt_server(tenant: Tenant) -> AuthorizationServer:
    return AuthorizationServer.objects.create(
        tenant=tenant, issuer=ISSUER, jwks_uri=JWKS_URI, user_claim="sub"
    )


@pytest.fixture
def introspection_server(tenant: Tenant) -> AuthorizationServer:
    return AuthorizationServer.objects.create(
        tenant=tenant,
        issuer="https://opaque.example",
        kind=AuthorizationServer.Kind.INTROSPECTION,
        introspection_endpoint="https://opaque.example/introspect",
        client_id="gateway",
        client_secret="gateway-secret",
        user_claim="username",
    )
