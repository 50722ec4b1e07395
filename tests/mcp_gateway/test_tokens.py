from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.utils import timezone

from mcp_gateway import credentials, tokens
from mcp_gateway.models import ApiToken, Membership


def test_issue_shows_the_secret_once_and_stores_only_its_hash(issued_token):
    row = ApiToken.objects.get()
    prefix, secret = tokens.split(issued_token.secret) or ("", "")

    assert issued_token.secret.startswith(f"mcpgw_{row.prefix}_")
    assert prefix == row.prefix
    assert row.secret_hash == tokens.hash_secret(secret)
    assert secret not in row.secret_hash
    assert not ApiToken.objects.filter(secret_hash__contains=secret).exists()
    assert row.scopes == ["mcp:tools"]
    assert row.expires_at is None


def test_issue_makes_the_user_a_member(tenant):
    outsider = User.objects.create_user("bob")

    tokens.issue(tenant, outsider)

    assert Membership.objects.filter(tenant=tenant, user=outsider).exists()


def test_issue_records_scopes_lifetime_and_name(tenant, member):
    issued = tokens.issue(
        tenant, member, scopes=["mcp:tools:read"], expires_in=60, name="ci"
    )

    row = issued.token
    assert row.scopes == ["mcp:tools:read"]
    assert row.name == "ci"
    assert row.expires_at is not None
    assert row.expires_at - timezone.now() <= timedelta(seconds=60)


def test_an_unknown_scope_is_refused(tenant, member):
    with pytest.raises(ValueError, match="admin:everything"):
        tokens.issue(tenant, member, scopes=["mcp:tools", "admin:everything"])

    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("expires_in", [0, -5])
def test_a_non_positive_lifetime_is_refused(tenant, member, expires_in):
    with pytest.raises(ValueError, match="lifetime"):
        tokens.issue(tenant, member, expires_in=expires_in)


def test_two_tokens_have_different_secrets(tenant, member):
    first = tokens.issue(tenant, member)
    second = tokens.issue(tenant, member)

    assert first.secret != second.secret
    assert first.token.prefix != second.token.prefix


@pytest.mark.parametrize(
    "raw",
    ["", "mcpgw", "mcpgw__x", "mcpgw_p_", "other_p_s", "mcpgw_p_s_t", "Bearer x"],
)
def test_split_refuses_malformed_tokens(raw):
    assert tokens.split(raw) is None


def test_the_token_authenticates_its_user_at_its_tenant(tenant, member, token):
    with credentials.collecting() as granted:
        user = authenticate(None, bearer_token=token, tenant=tenant)

    assert user == member
    credential = granted.of(user)
    assert credential is not None
    assert credential.tenant == tenant
    assert credential.token is not None
    assert credential.token.prefix in token
    assert credential.scopes == frozenset({"mcp:tools"})


def test_a_wrong_secret_is_refused(tenant, token):
    wrong = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")

    assert authenticate(None, bearer_token=wrong, tenant=tenant) is None


@pytest.mark.parametrize("raw", ["", "nonsense", "mcpgw_000000000000_secret"])
def test_a_malformed_or_unknown_token_is_refused(tenant, raw):
    assert authenticate(None, bearer_token=raw, tenant=tenant) is None


def test_a_token_is_refused_at_another_tenant(other_tenant, member, token):
    Membership.objects.create(tenant=other_tenant, user=member)

    assert authenticate(None, bearer_token=token, tenant=other_tenant) is None


def test_a_revoked_token_is_refused(tenant, token):
    tokens.revoke(token)

    assert authenticate(None, bearer_token=token, tenant=tenant) is None


def test_an_expired_token_is_refused(tenant, issued_token, token):
    ApiToken.objects.filter(pk=issued_token.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert authenticate(None, bearer_token=token, tenant=tenant) is None


def test_a_token_of_an_inactive_user_is_refused(tenant, member, token):
    member.is_active = False
    member.save()

    assert authenticate(None, bearer_token=token, tenant=tenant) is None


def test_a_token_of_a_former_member_is_refused(tenant, member, token):
    Membership.objects.filter(tenant=tenant, user=member).delete()

    assert authenticate(None, bearer_token=token, tenant=tenant) is None


def test_no_bearer_token_or_no_tenant_is_not_this_backends_business(tenant, token):
    assert authenticate(None, bearer_token=None, tenant=tenant) is None
    assert authenticate(None, bearer_token=token, tenant=None) is None


def test_a_password_login_does_not_reach_the_token_backend(member):
    assert authenticate(None, username="alice", password="alice-password") == member


def last_used(issued: tokens.IssuedToken) -> datetime | None:
    issued.token.refresh_from_db(fields=["last_used_at"])
    return issued.token.last_used_at


def test_use_is_recorded(tenant, issued_token, token):
    assert last_used(issued_token) is None

    authenticate(None, bearer_token=token, tenant=tenant)

    assert last_used(issued_token) is not None


def test_use_is_recorded_at_most_once_per_interval(tenant, issued_token, token):
    authenticate(None, bearer_token=token, tenant=tenant)
    first = last_used(issued_token)

    authenticate(None, bearer_token=token, tenant=tenant)

    assert last_used(issued_token) == first


def test_use_is_recorded_again_after_the_interval(tenant, issued_token, token):
    long_ago = timezone.now() - timedelta(seconds=61)
    ApiToken.objects.filter(pk=issued_token.token.pk).update(last_used_at=long_ago)

    authenticate(None, bearer_token=token, tenant=tenant)

    recorded = last_used(issued_token)
    assert recorded is not None
    assert recorded > long_ago


def test_the_interval_is_a_setting(settings, tenant, issued_token, token):
    settings.MCP_GATEWAY = {
        **settings.MCP_GATEWAY,
        "TOKEN_LAST_USED_INTERVAL_SECONDS": 1,
    }
    recently = timezone.now() - timedelta(seconds=2)
    ApiToken.objects.filter(pk=issued_token.token.pk).update(last_used_at=recently)

    authenticate(None, bearer_token=token, tenant=tenant)

    recorded = last_used(issued_token)
    assert recorded is not None
    assert recorded > recently


def test_a_successful_login_costs_one_query_when_use_is_fresh(
    tenant, token, django_assert_num_queries
):
    authenticate(None, bearer_token=token, tenant=tenant)

    with django_assert_num_queries(1):
        authenticate(None, bearer_token=token, tenant=tenant)


def test_a_successful_login_costs_no_query_when_kept_and_use_is_fresh(
    principal_cache, tenant, token, django_assert_num_queries
):
    authenticate(None, bearer_token=token, tenant=tenant)

    with django_assert_num_queries(0):
        authenticate(None, bearer_token=token, tenant=tenant)


def test_revoke_by_prefix(issued_token):
    revoked = tokens.revoke(issued_token.token.prefix)

    assert revoked is not None
    assert revoked.pk == issued_token.token.pk
    assert revoked.revoked_at is not None
    assert revoked.is_usable is False


def test_revoke_by_full_token(issued_token, token):
    revoked = tokens.revoke(token)

    issued_token.token.refresh_from_db()
    assert revoked is not None
    assert issued_token.token.revoked_at is not None


def test_revoking_twice_keeps_the_first_revocation_time(token):
    first = tokens.revoke(token)
    second = tokens.revoke(token)

    assert first is not None
    assert second is not None
    assert second.revoked_at == first.revoked_at


def test_revoking_an_unknown_token_returns_none(db):
    assert tokens.revoke("nope") is None
    assert tokens.revoke("mcpgw_nope_secret") is None
