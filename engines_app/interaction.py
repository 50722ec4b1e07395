"""Asking the caller for input before an engine goes on (no protocol here).

An engine that needs something from its caller returns a question from
``execute`` instead of a result; the call is repeated with the answer in
``context.reply``. The questions:

- :class:`InputRequest`: a flat form for the user to fill (answered by an
  :class:`InputReply`: accept, decline or cancel, with the form's content);
  :func:`confirm` is a yes/no form.
- :class:`UrlRequest`: send the user to a URL (an OAuth consent, a payment
  page); answered by an :class:`InputReply` without content (accept means
  the user agreed to open it, not that they finished there).
- :class:`ModelRequest`: ask the caller's model to answer a conversation
  (:class:`Message` turns, a system prompt, a token limit); answered by a
  :class:`ModelReply` (role, text, model, stop reason).
- :class:`RootsRequest`: ask which roots (directories, files) the caller
  works in; answered by a :class:`RootsReply` of :class:`Root` entries.
- :class:`InputRound`: several of the above at once, each under its own
  ``key``.

The repeated call's ``context.answers`` holds every answer by its
question's ``key``; ``context.reply`` is the answer to a single form or URL
question (as engines that only ask forms read it), else ``None``. Each
question's (or round's) ``state`` is the engine's own continuation text; it
comes back, unchanged and verified, in every answer's ``state``.
On 2026-07-28 a caller may bring answers along on its first call: a
question (or round) without ``state`` that they answer by key, each of its
kind, is answered at once (the engine runs again in the same request), so
give a question a ``state`` to have it always asked first; a
:func:`confirm` and a :class:`UrlRequest` always are.
``context.answerable`` tells which :data:`Kind` of question the caller can
answer on this call: an engine asks only those (asking another is a
protocol error on 2026-07-28, a tool error on the 2025 wires).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

Action = Literal["accept", "decline", "cancel"]
Kind = Literal["form", "url", "model", "roots"]
"""What a question asks for: :data:`FORM`, :data:`URL`, :data:`MODEL`, :data:`ROOTS`."""
FORM: Kind = "form"
URL: Kind = "url"
MODEL: Kind = "model"
ROOTS: Kind = "roots"
ALL_KINDS: frozenset[Kind] = frozenset({FORM, URL, MODEL, ROOTS})
CONFIRM_FIELD = "confirm"


@dataclass(frozen=True)
class InputRequest:
    """Ask the caller to fill a flat form before the engine continues.

    ``fields`` maps each field name to a JSON Schema of a primitive (string,
    number, integer, boolean or enum). ``state`` is the engine's own
    continuation text; it comes back, unchanged and verified, in the reply.
    ``key`` names the question on the wire (the key of the 2026-07-28
    ``inputRequests``) and in a :class:`RoundReply`.
    """

    message: str
    fields: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...] = ()
    state: str = ""
    key: str = "input"
    kind: ClassVar[Kind] = FORM


@dataclass(frozen=True)
class UrlRequest:
    """Ask the user to open ``url`` (out of band: nothing they enter there
    passes through the caller); the answer is an :class:`InputReply`."""

    message: str
    url: str
    state: str = ""
    key: str = "url"
    kind: ClassVar[Kind] = URL


@dataclass(frozen=True)
class Message:
    """One turn of a conversation for the caller's model."""

    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True)
class ModelRequest:
    """Ask the caller's model to continue ``messages``.

    ``max_tokens`` bounds the answer; ``system_prompt``, ``temperature``
    and ``stop_sequences`` are wishes the caller may ignore. The answer is a
    :class:`ModelReply`.
    """

    messages: Sequence[Message]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    state: str = ""
    key: str = "model"
    kind: ClassVar[Kind] = MODEL


@dataclass(frozen=True)
class RootsRequest:
    """Ask which roots the caller works in; the answer is a :class:`RootsReply`."""

    state: str = ""
    key: str = "roots"
    kind: ClassVar[Kind] = ROOTS


Question = InputRequest | UrlRequest | ModelRequest | RootsRequest
"""One question an engine may ask."""


@dataclass(frozen=True)
class InputRound:
    """Several questions asked together; their keys must differ.

    Every answer comes back by its question's key, with the round's
    ``state`` (the questions' own ``state`` is not used).
    """

    questions: Sequence[Question]
    state: str = ""


@dataclass(frozen=True)
class InputReply:
    """The caller's answer to an :class:`InputRequest` or a :class:`UrlRequest`."""

    action: Action
    content: Mapping[str, Any] = field(default_factory=dict)
    state: str = ""

    @property
    def confirmed(self) -> bool:
        """True when the caller accepted and ticked the confirmation box."""
        return self.action == "accept" and self.content.get(CONFIRM_FIELD) is True


@dataclass(frozen=True)
class ModelReply:
    """The caller's model's answer to a :class:`ModelRequest`.

    ``text`` is empty when the model answered with something other than
    text (an image, say); ``stop_reason`` is ``endTurn``, ``maxTokens``,
    ``stopSequence`` or the provider's own, when known.
    """

    text: str
    model: str
    role: Literal["user", "assistant"] = "assistant"
    stop_reason: str | None = None
    state: str = ""


@dataclass(frozen=True)
class Root:
    """A root the caller works in: a ``file://`` URI and an optional name."""

    uri: str
    name: str | None = None


@dataclass(frozen=True)
class RootsReply:
    """The caller's roots, in its order."""

    roots: tuple[Root, ...] = ()
    state: str = ""


Answer = InputReply | ModelReply | RootsReply
"""The answer to one :data:`Question`."""


Asked = Question | InputRound
"""What an engine may return to ask its caller."""


def questions_of(asked: Asked) -> tuple[Question, ...]:
    """The questions of one single question or round."""
    if isinstance(asked, InputRound):
        return tuple(asked.questions)
    return (asked,)


def single_reply(answers: Mapping[str, Answer]) -> InputReply | None:
    """``context.reply``: the one form or URL answer among ``answers``."""
    if len(answers) != 1:
        return None
    (answer,) = answers.values()
    return answer if isinstance(answer, InputReply) else None


def is_asked(value: Any) -> bool:
    """Whether an engine's value asks its caller (rather than answers)."""
    return isinstance(
        value, InputRequest | UrlRequest | ModelRequest | RootsRequest | InputRound
    )


def confirm(message: str, state: str = "") -> InputRequest:
    """Ask the caller to confirm with a single yes/no field."""
    checkbox = {"type": "boolean", "title": "Confirm", "description": message}
    return InputRequest(
        message, {CONFIRM_FIELD: checkbox}, required=(CONFIRM_FIELD,), state=state
    )
