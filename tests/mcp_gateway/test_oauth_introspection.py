"""Opaque tokens checked by RFC 7662 introspection, through authenticate()."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from mcp_gateway import credentials
from mcp_gateway.models import AuthorizationServer
from mcp_gateway.oauth import fetch
from tests.mcp_gateway.oauth_fixtures import (
    ISSUER,
    KID,
    RESOURCE,
    idp,
    introspection_server,
)
from tests.oauth_keys import claims, mint, new_key

__all__ = ["idp", "introspection_server"]

pytestmark = pytest.mark.usefixtures("introspection_server", "member")


def answer(**extra: Any) -> dict[str, Any]:
    base = {"active": True, "username": "alice", "scope": "mcp:tools", "aud": RESOURCE}
    return {**base, "exp": int(time.time()) + 300, **extra}


def login(token: str) -> Any:
    return authenticate(None, bearer_token=token, tenant="acme")


def test_an_active_token_for_the_resource_authenticates_the_member(idp):
    idp.introspection["opaque"] = answer(scope="mcp:tools:read")

    with credentials.collecting() as granted:
        user = login("opaque")

    assert user.get_username() == "alice"
    found = granted.of(user)
    assert found is not None
    assert found.scopes == frozenset({"mcp:tools:read"})
    assert idp.fetched == ["https://opaque.example/introspect"]


def test_a_positive_answer_is_cached(idp):
    idp.introspection["opaque"] = answer()
    login("opaque")
    idp.down = True

    assert login("opaque") is not None
    assert len(idp.fetched) == 1


def test_the_cache_never_outlives_the_tokens_exp(idp):
    idp.introspection["opaque"] = answer(exp=int(time.time()) - 1)

    assert login("opaque") is None
    assert login("opaque") is None
    assert len(idp.fetched) == 2


def test_an_inactive_token_is_refused_and_not_cached(idp):
    assert login("unknown") is None
    assert login("unknown") is None
    assert len(idp.fetched) == 2


@pytest.mark.parametrize(
    "extra",
    [
        {"aud": "http://testserver/t/globex/mcp"},
        {"aud": None},
        {"iss": "https://someone-else.example"},
        {"nbf": int(time.time()) + 600},
        {"username": "bob"},
        {"active": "true"},
    ],
    ids=["other-aud", "no-aud", "other-iss", "nbf", "non-member", "active-string"],
)
def test_an_answer_breaking_a_rule_is_refused(idp, extra):
    idp.introspection["opaque"] = {
        k: v for k, v in answer(**extra).items() if v is not None
    }

    assert login("opaque") is None


def test_an_unreachable_endpoint_raises_rather_than_failing_open(idp):
    idp.down = True

    with pytest.raises(fetch.AuthUnavailable):
        login("opaque")


def test_a_tenant_has_at_most_one_introspection_server(introspection_server):
    second = AuthorizationServer(
        tenant=introspection_server.tenant,
        issuer="https://other-opaque.example",
        kind=AuthorizationServer.Kind.INTROSPECTION,
        introspection_endpoint="https://other-opaque.example/introspect",
        client_id="gateway",
        client_secret="secret",
    )

    with pytest.raises(ValidationError, match="at most one introspection server"):
        second.full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        second.save()


def test_a_jwt_of_another_issuer_is_never_posted_to_the_introspection_server(
    idp, introspection_server
):
    AuthorizationServer.objects.create(
        tenant=introspection_server.tenant,
        issuer=ISSUER,
        jwks_uri="https://idp.example/jwks",
    )
    stranger = mint(new_key(), KID, claims("https://stranger.example", RESOURCE, "x"))

    assert login(idp.token(aud="http://elsewhere.example/mcp")) is None
    assert login(stranger) is None
    assert "https://opaque.example/introspect" not in idp.fetched


def test_a_jwt_of_the_introspection_servers_issuer_is_introspected(idp):
    token = mint(new_key(), KID, claims("https://opaque.example", RESOURCE, "alice"))
    idp.introspection[token] = answer()

    assert login(token) is not None
    assert idp.fetched == ["https://opaque.example/introspect"]
