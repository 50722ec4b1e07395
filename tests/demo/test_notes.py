"""The notes demo engines and the engine-side input request types."""

from __future__ import annotations

from typing import Any

import pytest

from demo.models import Note
from demo.notes import AddNote, DeleteNote
from engines_app.context import EngineContext, EngineRequest, Principal
from engines_app.errors import EngineError
from engines_app.interaction import InputReply, InputRequest, confirm
from mcp_gateway.models import Tenant


@pytest.fixture
def acme(db: None) -> Tenant:
    return Tenant.objects.create(slug="acme", name="Acme")


@pytest.fixture
def globex(db: None) -> Tenant:
    return Tenant.objects.create(slug="globex", name="Globex")


def run(
    engine: Any, tenant: Tenant, reply: InputReply | None = None, **arguments: Any
) -> Any:
    principal = Principal(tenant=tenant.slug, tenant_id=tenant.pk, user="alice")
    context = EngineContext(
        request=EngineRequest(strategy=engine.id, input=arguments),
        principal=principal,
        reply=reply,
    )
    return engine.execute(context)


def test_confirm_asks_for_one_required_boolean():
    request = confirm("Really?")

    assert request.required == ("confirm",)
    assert request.fields["confirm"]["type"] == "boolean"


@pytest.mark.parametrize(
    ("reply", "confirmed"),
    [
        (InputReply("accept", {"confirm": True}), True),
        (InputReply("accept", {"confirm": False}), False),
        (InputReply("accept", {"confirm": "yes"}), False),
        (InputReply("decline"), False),
    ],
)
def test_only_an_accepted_ticked_box_confirms(reply, confirmed):
    assert reply.confirmed is confirmed


def test_add_note_saves_a_note_for_the_callers_tenant(acme):
    added = run(AddNote(), acme, title="groceries", body="milk")

    note = Note.objects.get(pk=added["id"])
    assert (note.tenant, note.title, note.created_by) == (acme, "groceries", "alice")


def test_delete_note_asks_first_and_deletes_only_when_confirmed(acme):
    note = Note.objects.create(tenant=acme, title="groceries")

    first = run(DeleteNote(), acme, id=note.pk)
    declined = run(DeleteNote(), acme, InputReply("decline"), id=note.pk)
    still_there = Note.objects.filter(pk=note.pk).exists()
    done = run(DeleteNote(), acme, InputReply("accept", {"confirm": True}), id=note.pk)

    assert isinstance(first, InputRequest)
    assert declined == {"id": note.pk, "deleted": False}
    assert still_there
    assert done == {"id": note.pk, "deleted": True}
    assert not Note.objects.filter(pk=note.pk).exists()
    assert DeleteNote.hints.destructive is True


def test_another_tenants_note_is_not_found(acme, globex):
    note = Note.objects.create(tenant=globex, title="theirs")

    with pytest.raises(EngineError) as error:
        run(DeleteNote(), acme, id=note.pk)

    assert error.value.code == "NOT_FOUND"


def test_a_principal_without_a_tenant_key_saves_no_note(db):
    context = EngineContext(
        request=EngineRequest(strategy="demo.add_note", input={"title": "x"}),
        principal=Principal(tenant="acme"),
    )

    with pytest.raises(EngineError) as error:
        AddNote().execute(context)

    assert error.value.code == "NO_TENANT"
    assert not Note.objects.exists()
