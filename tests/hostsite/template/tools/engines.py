"""The site's own engine, discovered at start-up like an admin module."""

from engines_app.engine import Engine, Hints
from engines_app.errors import EngineError
from engines_app.registry import default_registry


@default_registry.register
class Summarize(Engine):
    id = "site.summarize"
    name = "Summarize"
    description = "Summarize a text in a few words."
    input_schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    output_schema = {
        "type": "object",
        "properties": {"summary": {"type": "string"}, "caller": {"type": "string"}},
        "required": ["summary"],
    }
    hints = Hints(read_only=True)

    def execute(self, context):
        text = context.request.input["text"]
        if not text.strip():
            raise EngineError("EMPTY", "There is nothing to summarize.")
        return {"summary": " ".join(text.split()[:3]), "caller": context.principal.user}
