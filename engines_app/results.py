"""Small result types for rich content, independent of any protocol."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Image:
    """An image; ``data`` is raw bytes or already base64-encoded text."""

    data: bytes | str
    mime_type: str

    @property
    def base64(self) -> str:
        return _b64(self.data)


@dataclass(frozen=True)
class Audio:
    """Audio; ``data`` is raw bytes or already base64-encoded text."""

    data: bytes | str
    mime_type: str

    @property
    def base64(self) -> str:
        return _b64(self.data)


@dataclass(frozen=True)
class Resource:
    """An embedded resource carrying either ``text`` or binary ``blob``."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: bytes | None = None


Content = Text | Image | Audio | Resource


@dataclass(frozen=True)
class RichResult:
    """Content blocks, plus an optional JSON object for machine readers."""

    content: tuple[Content, ...]
    structured: dict[str, Any] | None = field(default=None)
    is_error: bool = False
