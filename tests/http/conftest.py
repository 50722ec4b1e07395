"""Live servers: the project under gunicorn (WSGI) and uvicorn (ASGI)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from tests.live.servers import Server, database_url, running


@pytest.fixture(scope="module", params=["gunicorn", "uvicorn"])
def server(
    request: pytest.FixtureRequest,
    django_db_setup: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Server]:
    """One server per kind and module, against pytest-django's test DB."""
    db_url = database_url(connection.settings_dict)
    tmp = tmp_path_factory.mktemp(request.param)
    env = getattr(request.module, "SERVER_ENV", {})
    with running(request.param, db_url, tmp, **env) as live:
        yield live
