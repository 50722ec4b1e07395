"""Fixtures shared by the endpoint's tests."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads work was handed to, in order."""
    handed: list[str] = []
    submit = ThreadPoolExecutor.submit

    def counted(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        handed.append(self._thread_name_prefix)
        return submit(self, fn, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", counted)
    return handed
