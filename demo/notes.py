"""Demo engines over a real store: add a note, delete one after confirmation."""

from __future__ import annotations

from typing import Any

from demo.models import Note
from engines_app.context import EngineContext
from engines_app.engine import Engine, Hints
from engines_app.errors import EngineError
from engines_app.interaction import InputRequest, confirm

NOTE_ID = {"type": "integer", "minimum": 1}


class AddNote(Engine):
    id = "demo.add_note"
    name = "Add note"
    description = "Save a note for this tenant and return its id."
    input_schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 200},
            "body": {"type": "string", "maxLength": 10_000},
        },
        "required": ["title"],
        "additionalProperties": False,
    }
    output_schema = {
        "type": "object",
        "properties": {"id": NOTE_ID, "title": {"type": "string"}},
        "required": ["id", "title"],
    }
    hints = Hints(read_only=False, destructive=False, idempotent=False)

    def execute(self, context: EngineContext) -> dict[str, Any]:
        note = Note.objects.create(
            tenant_id=_tenant_id(context),
            title=context.request.input["title"],
            body=context.request.input.get("body", ""),
            created_by=context.principal.user or "",
        )
        return {"id": note.pk, "title": note.title}


class DeleteNote(Engine):
    id = "demo.delete_note"
    name = "Delete note"
    description = "Delete one of this tenant's notes, after the caller confirms."
    input_schema = {
        "type": "object",
        "properties": {"id": NOTE_ID},
        "required": ["id"],
        "additionalProperties": False,
    }
    output_schema = {
        "type": "object",
        "properties": {"id": NOTE_ID, "deleted": {"type": "boolean"}},
        "required": ["id", "deleted"],
    }
    hints = Hints(read_only=False, destructive=True, idempotent=True)

    def execute(self, context: EngineContext) -> dict[str, Any] | InputRequest:
        note = self._note(context)
        if context.reply is None:
            return confirm(f"Delete the note {note.title!r}? This cannot be undone.")
        if not context.reply.confirmed:
            return {"id": note.pk, "deleted": False}
        note.delete()
        return {"id": context.request.input["id"], "deleted": True}

    def _note(self, context: EngineContext) -> Note:
        note = Note.objects.filter(
            tenant_id=_tenant_id(context), pk=context.request.input["id"]
        ).first()
        if note is None:
            raise EngineError("NOT_FOUND", "There is no note with this id.")
        return note


def _tenant_id(context: EngineContext) -> int:
    """The caller's tenant's primary key; notes are never keyed by slug."""
    tenant_id = context.principal.tenant_id
    if tenant_id is None:
        raise EngineError("NO_TENANT", "Notes need a tenant.")
    return tenant_id


ENGINES = (AddNote, DeleteNote)
