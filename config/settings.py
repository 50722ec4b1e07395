"""Settings of the reference project; every deploy value comes from the env."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

SECRET_KEY = env.str(
    "SECRET_KEY", default="django-insecure-reference-project-development-only-key"
)
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
# Served under a path prefix behind a proxy that strips it, e.g. "/mcp";
# gunicorn's SCRIPT_NAME does the same when the proxy keeps the prefix.
FORCE_SCRIPT_NAME = env.str("FORCE_SCRIPT_NAME", default=None)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "engines_app",
    "mcp_gateway",
    # The demo engines, their notes and `mcp_demo`: the reference project's
    # own app, not part of the distributed package.
    "demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
}
# How this process serves requests: config/wsgi.py and config/asgi.py set it
# before the settings load; manage.py (runserver, commands) counts as WSGI.
SERVER_INTERFACE = env.str("MCP_SERVER_INTERFACE", default="wsgi")
# PostgreSQL connections, unless the URL's query sets them itself:
# - under WSGI, persistent connections (`CONN_MAX_AGE` 600 s) with health
#   checks, so a request does not pay a new connection (several ms) each time;
# - under ASGI, psycopg's connection pool, each connection checked when it
#   is taken (Django advises against persistent connections under ASGI).
# A URL whose query names `conn_max_age` or `pool` is taken as it is.
_database_query = parse_qs(urlsplit(env.str("DATABASE_URL", default="")).query)
_chose_connections = bool({"conn_max_age", "pool"} & _database_query.keys())
_postgresql_engines = {"django.db.backends.postgresql", "mcp_gateway.db.postgresql"}
if (
    DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    and not _chose_connections
):
    if SERVER_INTERFACE == "asgi":
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = True
    else:
        DATABASES["default"]["CONN_MAX_AGE"] = 600
    # Django's backend, whose health check (the `SELECT 1`; the pool's check
    # when a connection is taken from it) is skipped for a connection that
    # answered within the last second and whose socket shows nothing
    # (`mcp_gateway.db.postgresql`).
    DATABASES["default"]["ENGINE"] = "mcp_gateway.db.postgresql"
    # Checked before use (a pooled one when taken from the pool): after a
    # database restart a worker would otherwise fail a request per dead
    # connection it holds.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# PostgreSQL options, from the URL's query (strings there):
# - `pool=true`: psycopg's connection pool (with `conn_max_age=0`), the ASGI
#   default above;
# - `server_side_binding` and `prepare_threshold`: on by default here, so the
#   request's one query is planned once per connection, not per request
#   (about 250 µs each); behind a transaction-pooling PgBouncer older than
#   1.21, set `server_side_binding=false&prepare_threshold=none`.
_options = DATABASES["default"].setdefault("OPTIONS", {})
if DATABASES["default"]["ENGINE"] in _postgresql_engines:
    _options.setdefault("server_side_binding", "true")
    _options.setdefault("prepare_threshold", "5")
for _flag in ("pool", "server_side_binding"):
    if isinstance(_options.get(_flag), str):
        _options[_flag] = _options[_flag].lower() in {"1", "true", "yes", "on"}
_threshold = _options.get("prepare_threshold")
if isinstance(_threshold, str):
    _options["prepare_threshold"] = (
        None if _threshold in {"", "none"} else int(_threshold)
    )
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "mcp_gateway.backends.ApiTokenBackend",
    "mcp_gateway.oauth.backend.OAuthBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

MCP_GATEWAY = {
    "ENGINES": env.list(
        "MCP_ENGINES",
        default=[
            "demo.basic.ENGINES",
            "demo.conformance.ENGINES",
            "demo.notes.ENGINES",
        ],
    ),
    "AUTH_MODE": env.str("MCP_AUTH_MODE", default="required"),
    "PUBLIC_BASE_URL": env.str("MCP_PUBLIC_BASE_URL", default="http://127.0.0.1:8000"),
    "ALLOWED_ORIGINS": env.list("MCP_ALLOWED_ORIGINS", default=[]),
    "MAX_REQUEST_BYTES": env.int("MCP_MAX_REQUEST_BYTES", default=1_048_576),
    "ENGINE_DEADLINE_SECONDS": env.float("MCP_ENGINE_DEADLINE_SECONDS", default=30.0),
    "TOOLS_LIST_TTL_MS": env.int("MCP_TOOLS_LIST_TTL_MS", default=60_000),
    "RATE_LIMIT_FAIL_OPEN": env.bool("MCP_RATE_LIMIT_FAIL_OPEN", default=True),
    "MAX_CONCURRENT_CALLS_PER_TENANT": env.int(
        "MCP_MAX_CONCURRENT_CALLS_PER_TENANT", default=None
    ),
    "JWKS_TIMEOUT_SECONDS": env.float("MCP_JWKS_TIMEOUT_SECONDS", default=5.0),
    "OAUTH_MAX_RESPONSE_BYTES": env.int(
        "MCP_OAUTH_MAX_RESPONSE_BYTES", default=262_144
    ),
    "OAUTH_FAILURE_CACHE_SECONDS": env.float(
        "MCP_OAUTH_FAILURE_CACHE_SECONDS", default=30.0
    ),
    "OAUTH_ALLOWED_PRIVATE_HOSTS": env.list(
        "MCP_OAUTH_ALLOWED_PRIVATE_HOSTS", default=[]
    ),
    # Under ASGI, the MCP mount skips Django's middleware chain
    # (docs/performance.md, "Under ASGI"); false: the whole chain.
    "ASGI_FAST_PATH": env.bool("MCP_ASGI_FAST_PATH", default=True),
    "WSGI_FAST_PATH": env.bool("MCP_WSGI_FAST_PATH", default=True),
    "ASGI_LOOP_ANSWERS": env.bool("MCP_ASGI_LOOP_ANSWERS", default=True),
    "SSE_KEEPALIVE_SECONDS": env.float("MCP_SSE_KEEPALIVE_SECONDS", default=15.0),
    "MAX_LISTENERS_PER_TENANT": env.int("MCP_MAX_LISTENERS_PER_TENANT", default=100),
    "MAX_LISTENERS_PER_PROCESS": env.int("MCP_MAX_LISTENERS_PER_PROCESS", default=1000),
    "REQUEST_STATE_TTL_SECONDS": env.float(
        "MCP_REQUEST_STATE_TTL_SECONDS", default=600.0
    ),
    "ALLOW_INSECURE_LOOPBACK_ISSUERS": env.bool(
        "MCP_ALLOW_INSECURE_LOOPBACK_ISSUERS", default=False
    ),
    "AUDIT_CALLS": env.bool("MCP_AUDIT_CALLS", default=True),
    # "async": a call's audit row is committed before the answer without
    # waiting for PostgreSQL's disk flush; "durable": flushed before it.
    "AUDIT_DURABILITY": env.str("MCP_AUDIT_DURABILITY", default="async"),
    "SIGNAL_BEARER_FAILURES": env.bool("MCP_SIGNAL_BEARER_FAILURES", default=True),
    "BUS": env.str("MCP_BUS", default="auto"),
    "BUS_DATABASE": env.str("MCP_BUS_DATABASE", default="default"),
    # Unset: no metrics kept, /metrics answers 404 (docs/operations.md).
    "METRICS_TOKEN": env.str("MCP_METRICS_TOKEN", default=""),
    # "hold": a tool whose definition changed is not served until staff
    # approve it again; "serve": served at once, flagged "changed".
    "DRIFT_POLICY": env.str("MCP_DRIFT_POLICY", default="hold"),
    "CALL_APPROVAL": env.str("MCP_CALL_APPROVAL", default="client"),
    # Fernet keys for engine secrets, comma-separated, newest first.
    "SECRET_KEYS": env.list("MCP_SECRET_KEYS", default=[]),
    "SECRETS_CACHE_SECONDS": env.float("MCP_SECRETS_CACHE_SECONDS", default=300.0),
    "PRINCIPAL_CACHE_SECONDS": env.float("MCP_PRINCIPAL_CACHE_SECONDS", default=10.0),
    "AUDIT_STREAM": env.str("MCP_AUDIT_STREAM", default=""),
    "AUDIT_ANCHOR_KEY": env.str("MCP_AUDIT_ANCHOR_KEY", default=""),
}

# The management API (mcp_gateway.api) sets its own authentication,
# permissions, paging and error handler on its views; only the schema class
# is global, as drf-spectacular requires.
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "django-mcp-gateway management API",
    "DESCRIPTION": "Tenants, members, exposures, tokens and engines; staff only.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# A server error's traceback goes to the console when DEBUG is off too (with
# DEBUG on, Django's own console handler prints it).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"debug_off": {"()": "django.utils.log.RequireDebugFalse"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        "errors": {"class": "logging.StreamHandler", "filters": ["debug_off"]},
    },
    "loggers": {
        "mcp_gateway": {"handlers": ["console"], "level": "INFO"},
        "django.request": {"handlers": ["errors"], "level": "ERROR"},
    },
}
