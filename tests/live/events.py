"""Read a ``text/event-stream`` response as it arrives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2


@dataclass(frozen=True)
class Event:
    """One SSE event, or a comment line (``data`` is then ``None``)."""

    comment: str | None = None
    data: Any = None


def events(response: httpx2.Response) -> Iterator[Event]:
    """Yield each event and each comment line of the stream, as it comes."""
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith(":"):
            yield Event(comment=line[1:].strip())
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            yield Event(data=json.loads("\n".join(data)))
            data = []
