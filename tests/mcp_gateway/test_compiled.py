"""Compiled queries give what the ORM gives, on every supported Django.

``compiled`` runs querysets through Django's compiler internals
(``klass_info``, the related populators, ``InsertQuery``, the converters), so
these tests hold its rows equal to the ORM's own, field by field, related
objects and annotations included. The in-process benchmark measures what it
saves (``benchmarks/inprocess.py --without compiled``).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Exists, OuterRef
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from mcp_gateway import tokens
from mcp_gateway.audit.models import ToolCall
from mcp_gateway.compiled import CompiledInsert, CompiledSelect
from mcp_gateway.models import ApiToken, Membership, Tenant


def _token_query(prefix: str, slug: str):
    membership = Membership.objects.filter(
        tenant=OuterRef("tenant"), user=OuterRef("user")
    )
    return (
        ApiToken.objects.select_related("user", "tenant")
        .annotate(is_member=Exists(membership))
        .filter(prefix=prefix, tenant__slug=slug)
    )


@pytest.fixture
def issued(tenant, member):
    tenant.engine_config = {"nested": {"list": [1, 2]}, "text": "é"}
    tenant.save()
    return tokens.issue(tenant, member, scopes=["mcp:tools", "mcp:tools:read"])


def test_a_select_gives_the_orm_s_instance(issued, tenant, member):
    compiled = CompiledSelect(_token_query, "prefix", "slug")

    got = compiled.first(prefix=issued.token.prefix, slug=tenant.slug)
    want = _token_query(issued.token.prefix, tenant.slug).get()

    assert got is not None
    assert got.pk == want.pk
    for field in ApiToken._meta.concrete_fields:
        assert getattr(got, field.attname) == getattr(want, field.attname), field
    assert got.is_member is want.is_member is True  # the annotation
    assert got.user == member  # select_related, no further query
    assert got.tenant.engine_config == want.tenant.engine_config  # JSON converted
    assert got.tenant.created_at == want.tenant.created_at  # datetime converted
    assert got._state.db == "default"
    assert not got._state.adding


def test_related_objects_come_without_a_query(issued, tenant):
    compiled = CompiledSelect(_token_query, "prefix", "slug")

    with CaptureQueriesContext(connection) as queries:
        got = compiled.first(prefix=issued.token.prefix, slug=tenant.slug)
        assert got is not None
        assert got.user.get_username() == "alice"
        assert got.tenant.slug == tenant.slug

    assert len(queries) == 1  # seen by query logging and assertNumQueries


def test_no_row_is_none(tenant):
    compiled = CompiledSelect(_token_query, "prefix", "slug")

    assert compiled.first(prefix="nope", slug=tenant.slug) is None


def test_each_run_uses_its_own_values(tenant, other_tenant):
    compiled = CompiledSelect(
        lambda slug: Tenant.objects.filter(slug=slug, is_active=True), "slug"
    )

    assert compiled.first(slug=tenant.slug) == tenant
    assert compiled.first(slug=other_tenant.slug) == other_tenant
    other_tenant.is_active = False
    other_tenant.save()
    assert compiled.first(slug=other_tenant.slug) is None


def test_a_placeholder_not_used_as_a_value_is_refused(tenant):
    compiled = CompiledSelect(
        lambda slug: Tenant.objects.filter(is_active=True), "slug"
    )

    with pytest.raises(ValueError, match="slug"):
        compiled.first(slug=tenant.slug)


def test_an_insert_writes_what_the_orm_would(tenant):
    inserter = CompiledInsert(ToolCall)
    when = timezone.now() - timedelta(minutes=5)
    values = {
        "tenant": tenant,
        "tenant_slug": tenant.slug,
        "tool_name": "demo_echo",
        "outcome": "ok",
        "duration_ms": 7,
        "arguments": {"text": "héllo", "n": [1, 2.5, None]},
        "created_at": when,
    }

    inserter.insert(ToolCall(**values))
    inserter.insert(ToolCall(**{**values, "tool_name": "second"}))
    ToolCall.objects.create(**{**values, "tool_name": "orm"})

    rows = {row.tool_name: row for row in ToolCall.objects.all()}
    for field in ToolCall._meta.concrete_fields:
        if field.primary_key:
            continue
        orm = getattr(rows["orm"], field.attname)
        mine = getattr(rows["demo_echo"], field.attname)
        if field.name != "tool_name":
            assert mine == orm, field
    assert len({row.pk for row in rows.values()}) == 3


def test_an_insert_leaves_the_instance_unsaved(tenant):
    call = ToolCall(tenant=tenant, tenant_slug=tenant.slug, outcome="ok")

    CompiledInsert(ToolCall).insert(call)

    assert call.pk is None
    assert ToolCall.objects.get().created_at is not None  # its default applied
