"""A session started with any backend order loads its user back.

``Client.force_login()`` (and ``login()`` without ``authenticate()``) store
the first configured backend in the session; each later request asks that
backend's ``get_user``. The gateway's backends must load the user as
``ModelBackend`` does, or such a session is silently anonymous.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user
from django.contrib.auth.models import User

from mcp_gateway.backends import ApiTokenBackend
from mcp_gateway.oauth.backend import OAuthBackend

TOKEN_BACKEND = "mcp_gateway.backends.ApiTokenBackend"
OAUTH_BACKEND = "mcp_gateway.oauth.backend.OAuthBackend"
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


@pytest.mark.parametrize("first", [TOKEN_BACKEND, OAUTH_BACKEND, MODEL_BACKEND])
def test_force_login_works_whichever_backend_comes_first(
    client, staff, settings, first
):
    settings.AUTHENTICATION_BACKENDS = [
        first,
        *(b for b in (MODEL_BACKEND, TOKEN_BACKEND, OAUTH_BACKEND) if b != first),
    ]

    client.force_login(staff)
    response = client.get("/admin/")

    assert response.status_code == 200
    assert response.wsgi_request.user == staff


@pytest.mark.parametrize("backend", [ApiTokenBackend, OAuthBackend])
def test_get_user_loads_an_active_user_like_model_backend(db, backend):
    active = User.objects.create_user("alice")
    inactive = User.objects.create_user("bob", is_active=False)

    assert backend().get_user(active.pk) == active
    assert backend().get_user(inactive.pk) is None
    assert backend().get_user(10**9) is None
    assert backend().get_user("not-a-key") is None


def test_a_session_from_the_token_backend_survives_a_request(client, staff, settings):
    settings.AUTHENTICATION_BACKENDS = [TOKEN_BACKEND, MODEL_BACKEND]
    client.force_login(staff)

    request = client.get("/admin/").wsgi_request

    assert get_user(request).is_authenticated
