"""The test settings with django-axes installed as its documentation says.

Its backend first, its middleware last, lockout by address after three
failures; an in-memory database that ``probe`` migrates itself.
"""

from __future__ import annotations

from tests.settings import *  # noqa: F403
from tests.settings import AUTHENTICATION_BACKENDS, INSTALLED_APPS, MIDDLEWARE

INSTALLED_APPS = [*INSTALLED_APPS, "axes"]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    *AUTHENTICATION_BACKENDS,
]
MIDDLEWARE = [*MIDDLEWARE, "axes.middleware.AxesMiddleware"]
AXES_FAILURE_LIMIT = 3
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
