"""A backend's verified credential reaches only the endpoint that asked."""

from __future__ import annotations

import asyncio

from mcp_gateway import credentials
from mcp_gateway.credentials import Credential


def test_a_grant_outside_a_slot_goes_nowhere(tenant, member):
    credentials.grant(Credential(member, tenant, frozenset({"mcp:tools"})))

    with credentials.collecting() as granted:
        pass

    assert granted.of(member) is None


def test_the_slot_holds_what_was_granted_for_the_chosen_user(
    tenant, member, django_user_model
):
    other = django_user_model.objects.create_user("other")
    with credentials.collecting() as granted:
        credentials.grant(Credential(other, tenant, frozenset()))
        credentials.grant(Credential(member, tenant, frozenset({"mcp:tools"})))

    found = granted.of(member)
    assert found is not None
    assert found.scopes == frozenset({"mcp:tools"})
    assert granted.of(other) is not None
    assert granted.of(object()) is None


def test_concurrent_requests_never_see_each_others_credentials(tenant, member):
    async def request(scopes: frozenset[str]) -> Credential | None:
        with credentials.collecting() as granted:
            await asyncio.sleep(0)
            credentials.grant(Credential(member, tenant, scopes))
            await asyncio.sleep(0)
        return granted.of(member)

    async def both() -> tuple[Credential | None, Credential | None]:
        return await asyncio.gather(
            request(frozenset({"a"})), request(frozenset({"b"}))
        )

    first, second = asyncio.run(both())
    assert first is not None
    assert second is not None
    assert (first.scopes, second.scopes) == (frozenset({"a"}), frozenset({"b"}))
