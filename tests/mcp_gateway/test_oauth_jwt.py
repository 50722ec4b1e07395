"""JWT access tokens: every claim and header rule, through authenticate()."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from django.contrib.auth import authenticate
from django.contrib.auth.models import User

from mcp_gateway import credentials
from mcp_gateway.credentials import Credential
from mcp_gateway.models import Membership, Tenant
from mcp_gateway.oauth import fetch, jwks
from tests.mcp_gateway.oauth_fixtures import (
    ISSUER,
    KID,
    RESOURCE,
    idp,
    jwt_server,
)
from tests.oauth_keys import claims, mint, new_key, public_jwk

__all__ = ["idp", "jwt_server"]

pytestmark = pytest.mark.usefixtures("jwt_server", "member")


def login(token: str, tenant: Tenant | str = "acme") -> Any:
    return authenticate(None, bearer_token=token, tenant=tenant)


def credential(token: str) -> Credential:
    """What the backend grants the endpoint for ``token``."""
    with credentials.collecting() as granted:
        user = login(token)
    found = granted.of(user)
    assert found is not None
    return found


def test_a_good_token_authenticates_the_member_with_its_scopes(idp, tenant):
    granted = credential(idp.token(scope="mcp:tools:read openid"))

    assert granted.user.get_username() == "alice"
    assert granted.tenant == tenant
    assert granted.token is None
    assert granted.scopes == frozenset({"mcp:tools:read", "openid"})


def test_a_tenant_object_works_like_its_slug(idp, tenant):
    assert login(idp.token(), tenant) is not None


def test_scp_as_a_list_is_read_as_scopes(idp):
    token = idp.token(scope=None, scp=["mcp:tools"])

    assert credential(token).scopes == frozenset({"mcp:tools"})


def test_alg_none_is_refused(idp):
    unsigned = jwt.encode(claims(ISSUER, RESOURCE, "alice"), "", algorithm="none")

    assert login(unsigned) is None


def test_hs256_signed_with_the_public_key_is_refused(idp):
    pem = idp.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    forged = _hmac_jwt(claims(ISSUER, RESOURCE, "alice"), pem)

    assert login(forged) is None


def _hmac_jwt(payload, secret: bytes) -> str:
    """PyJWT refuses PEM keys as HMAC secrets; an attacker does not."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "kid": KID, "typ": "JWT"}).encode())
    body = b64(json.dumps(payload).encode())
    signature = hmac.new(secret, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{b64(signature)}"


def test_an_algorithm_off_the_allowed_list_is_refused(idp):
    token = mint(idp.key, KID, claims(ISSUER, RESOURCE, "alice"), alg="RS384")

    assert login(token) is None


def test_a_wrong_audience_is_refused(idp):
    other = "http://testserver/t/globex/mcp"

    assert login(mint(idp.key, KID, claims(ISSUER, other, "alice"))) is None


def test_an_audience_list_containing_the_resource_is_accepted(idp):
    audience = ["https://elsewhere.example/api", RESOURCE]

    assert login(mint(idp.key, KID, claims(ISSUER, audience, "alice"))) is not None


@pytest.mark.parametrize(
    "audience",
    [
        "http://testserver/T/acme/mcp",
        "http://testserver/t/acme/mcp/",
        "http://testserver/t/acme/mcp?x=1",
        "https://testserver/t/acme/mcp",
        "http://testserver:8000/t/acme/mcp",
    ],
    ids=["path-case", "trailing-slash", "query", "scheme", "port"],
)
def test_an_audience_differing_outside_scheme_and_host_case_is_refused(idp, audience):
    assert login(mint(idp.key, KID, claims(ISSUER, audience, "alice"))) is None


def test_scheme_and_host_compare_case_insensitively(idp):
    audience = "HTTP://TestServer/t/acme/mcp"

    assert login(mint(idp.key, KID, claims(ISSUER, audience, "alice"))) is not None


def test_a_token_not_yet_valid_is_refused(idp):
    assert login(idp.token(nbf=int(time.time()) + 600)) is None


def test_a_token_without_exp_is_refused(idp):
    payload = claims(ISSUER, RESOURCE, "alice")
    del payload["exp"]

    assert login(mint(idp.key, KID, payload)) is None


def test_an_expired_token_is_refused_beyond_the_leeway(idp):
    assert login(idp.token(exp=int(time.time()) - 120)) is None
    assert login(idp.token(exp=int(time.time()) - 5)) is not None


def test_an_untrusted_issuer_is_refused(idp):
    token = mint(idp.key, KID, claims("https://evil.example", RESOURCE, "alice"))

    assert login(token) is None
    assert idp.fetched == []  # its keys are never even fetched


def test_a_token_signed_by_another_key_with_a_known_kid_is_refused(idp):
    forged = mint(new_key(), KID, claims(ISSUER, RESOURCE, "alice"))

    assert login(forged) is None


def test_an_unknown_kid_refreshes_the_key_set_once_per_interval(idp):
    rotated = new_key()
    login(idp.token())
    idp.keys = [*idp.keys, public_jwk(rotated, "k2")]

    first = login(mint(rotated, "k2", claims(ISSUER, RESOURCE, "alice")))
    unknown = [mint(rotated, "nope", claims(ISSUER, RESOURCE, "alice"))] * 3
    for token in unknown:
        assert login(token) is None

    assert first is None  # the first download just happened: no refresh yet
    assert len(idp.fetched) == 1


def test_a_rotated_key_is_found_once_the_refresh_interval_allows(idp, monkeypatch):
    monkeypatch.setattr(jwks, "REFRESH_INTERVAL", 0)
    rotated = new_key()
    login(idp.token())
    idp.keys = [public_jwk(rotated, "k2")]

    assert login(mint(rotated, "k2", claims(ISSUER, RESOURCE, "alice"))) is not None
    assert len(idp.fetched) == 2


def test_an_unreachable_key_set_raises_rather_than_failing_open(idp):
    idp.down = True

    with pytest.raises(fetch.AuthUnavailable):
        login(idp.token())


def test_a_user_who_is_not_a_member_is_refused(idp):
    User.objects.create_user("bob")

    assert login(idp.token("bob")) is None


def test_an_inactive_member_is_refused(idp, member):
    member.is_active = False
    member.save()

    assert login(idp.token()) is None


def test_a_token_for_another_tenants_resource_is_refused(idp, other_tenant, member):
    Membership.objects.create(tenant=other_tenant, user=member)

    assert login(idp.token(), "globex") is None


def test_an_api_token_is_not_inspected_by_the_oauth_backend(idp, token):
    user = login(token)

    assert user is not None
    assert idp.fetched == []


def test_users_can_be_matched_by_email(idp, jwt_server, member):
    member.email = "Alice@Example.com"
    member.save()
    jwt_server.user_claim = "email"
    jwt_server.user_field = "email"
    jwt_server.save()

    assert login(idp.token("x", email="alice@example.com")) == member
