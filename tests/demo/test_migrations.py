"""The notes' move from engines_app (keyed by slug) to demo (keyed by pk)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("demo", None), ("engines_app", "0001_initial")]


def migrate(targets: list[tuple[str, str | None]]) -> Any:
    """Migrate to ``targets``; the models as the applied migrations leave them."""
    MigrationExecutor(connection).migrate(targets)
    loader = MigrationExecutor(connection).loader
    return loader.project_state(list(loader.applied_migrations)).apps


def test_the_move_keeps_each_note_with_its_tenant_and_drops_the_old_table():
    old = migrate(BEFORE)
    tenant = old.get_model("mcp_gateway", "Tenant").objects.create(
        slug="acme", name="Acme"
    )
    old_note = old.get_model("engines_app", "Note")
    old_note.objects.create(tenant="acme", title="kept", body="b", created_by="al")
    old_note.objects.create(tenant="gone", title="orphan")

    executor = MigrationExecutor(connection)
    new = migrate(executor.loader.graph.leaf_nodes())

    notes = list(new.get_model("demo", "Note").objects.values())
    assert [
        (n["tenant_id"], n["title"], n["body"], n["created_by"]) for n in notes
    ] == [(tenant.pk, "kept", "b", "al")]
    assert "engines_app_note" not in connection.introspection.table_names()
