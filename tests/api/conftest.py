"""Fixtures of the management API tests: a staff client and helpers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from engines_app.registry import default_registry


@pytest.fixture
def api(staff: User) -> APIClient:
    """A client authenticated as staff, for tests where auth is not the point."""
    client = APIClient()
    client.force_authenticate(staff)
    return client


@pytest.fixture
def without_collision() -> Iterator[None]:
    """Uninstall ``demo:echo`` so that ``expose_all`` can succeed."""
    engine = default_registry.get("demo:echo")
    assert engine is not None
    default_registry.unregister("demo:echo")
    yield
    default_registry.register(engine)
