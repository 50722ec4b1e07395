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
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy

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


def _executed(run) -> list[tuple[str, str]]:
    """Each statement ``run`` executes, with its parameters as they reach the
    driver (their ``repr``: the adapter types, ``Int4``, ``Jsonb``, too)."""
    seen: list[tuple[str, str]] = []

    def wrapper(execute, sql, params, many, context):
        seen.append((sql, repr(params)))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        run()
    return seen


ROW_VALUES = [
    {},
    {"tool_name": "démo_écho 🙂", "user": "", "arguments": None},
    {"tool_name": "x" * 200, "duration_ms": 2**31 - 1, "chain_seq": 2**40},
    {"arguments": {"n": [1, 2.5, None, True, 10**30], "s": "é\u2028"}},
    {"arguments": ["a", {"b": {}}], "error_code": "-32602"},
    {"arguments": "[unstorable]", "tenant_id": None},
    # Values a CharField converts, and a str subclass: prepared as before.
    {"tool_name": 7, "user": gettext_lazy("lazy"), "outcome": mark_safe("ok")},
]


@pytest.mark.parametrize("extra", ROW_VALUES, ids=range(len(ROW_VALUES)))
@pytest.mark.parametrize("suffixed", [False, True])
def test_an_insert_of_values_sends_what_the_insert_of_the_instance_sends(
    tenant, extra, suffixed
):
    suffixes = {connection.vendor: " RETURNING 1"} if suffixed else None
    values = {
        "tenant_id": tenant.pk,
        "tenant_slug": tenant.slug,
        "outcome": "ok",
        "created_at": timezone.now() - timedelta(minutes=5),
        **extra,
    }
    by_instance = CompiledInsert(ToolCall, suffixes)
    by_values = CompiledInsert(ToolCall, suffixes)

    sent = _executed(lambda: by_instance.insert(ToolCall(**values)))
    assert _executed(lambda: by_values.insert_values(values)) == sent
    assert _executed(lambda: by_values.insert_values(values)) == sent  # planned
    rows = list(ToolCall.objects.order_by("pk").values())
    assert len(rows) == 3
    assert [{**row, "id": None} for row in rows[1:]] == [{**rows[0], "id": None}] * 2


def test_an_insert_of_values_gives_the_fields_left_out_their_defaults(tenant):
    before = timezone.now()

    CompiledInsert(ToolCall).insert_values(
        {"tenant_id": tenant.pk, "tenant_slug": tenant.slug, "outcome": "ok"}
    )

    row = ToolCall.objects.get()
    assert row.created_at >= before
    assert (row.duration_ms, row.chain_seq, row.chain_hash, row.user) == (
        0,
        None,
        "",
        "",
    )


def test_an_insert_of_values_refuses_a_field_computed_when_saved():
    with pytest.raises(TypeError, match="created_at"):
        CompiledInsert(ApiToken).insert_values({})
