"""The notes demo engines and the engine-side input request types."""

from __future__ import annotations

from typing import Any

import pytest

from engines_app.context import EngineContext, EngineRequest, Principal
from engines_app.demo.notes import AddNote, DeleteNote
from engines_app.errors import EngineError
from engines_app.interaction import InputReply, InputRequest, confirm
from engines_app.models import Note

ALICE = Principal(tenant="acme", user="alice")


def run(engine: Any, reply: InputReply | None = None, **arguments: Any) -> Any:
    context = EngineContext(
        request=EngineRequest(strategy=engine.id, input=arguments),
        principal=ALICE,
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


def test_add_note_saves_a_note_for_the_callers_tenant(db):
    added = run(AddNote(), title="groceries", body="milk")

    note = Note.objects.get(pk=added["id"])
    assert (note.tenant, note.title, note.created_by) == ("acme", "groceries", "alice")


def test_delete_note_asks_first_and_deletes_only_when_confirmed(db):
    note = Note.objects.create(tenant="acme", title="groceries")

    first = run(DeleteNote(), id=note.pk)
    declined = run(DeleteNote(), InputReply("decline"), id=note.pk)
    still_there = Note.objects.filter(pk=note.pk).exists()
    done = run(DeleteNote(), InputReply("accept", {"confirm": True}), id=note.pk)

    assert isinstance(first, InputRequest)
    assert declined == {"id": note.pk, "deleted": False}
    assert still_there
    assert done == {"id": note.pk, "deleted": True}
    assert not Note.objects.filter(pk=note.pk).exists()
    assert DeleteNote.hints.destructive is True


def test_another_tenants_note_is_not_found(db):
    note = Note.objects.create(tenant="globex", title="theirs")

    with pytest.raises(EngineError) as error:
        run(DeleteNote(), id=note.pk)

    assert error.value.code == "NOT_FOUND"
