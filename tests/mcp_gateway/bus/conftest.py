"""Fixtures for the change bus: a fresh bus per test, an event recorder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcp_gateway import bus
from tests.mcp_gateway.bus.helpers import Recorder


@pytest.fixture
def fresh_bus() -> Iterator[None]:
    """No bus from an earlier test; this test's bus closed afterwards."""
    bus.close()
    yield
    bus.close()


@pytest.fixture
def recorder(fresh_bus: None) -> Recorder:
    return Recorder()
