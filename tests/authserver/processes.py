"""Run the tests' authorization servers as separate processes on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from tests.authserver.admin import CLIENT, GATEWAY
from tests.live.servers import BIN, ROOT, free_port, wait_for_port


@dataclass(frozen=True)
class OAuthToolkit:
    """django-oauth-toolkit: opaque tokens, RFC 7662 introspection."""

    url: str
    env: dict[str, str]
    client = CLIENT
    gateway = GATEWAY

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def introspection_endpoint(self) -> str:
        return f"{self.url}/o/introspect/"

    def token(self, username: str, resource: str, scope: str = "mcp:tools") -> str:
        """A password-grant token bound to ``resource`` (RFC 8707)."""
        form = {
            "grant_type": "password",
            "username": username,
            "password": f"{username}-password",
            "scope": scope,
            "resource": resource,
        }
        return _token(f"{self.url}/o/token/", form, self.client)

    def expire(self, token: str) -> None:
        """Expire ``token`` in the server's own database, as its staff would."""
        subprocess.run(
            [sys.executable, "-m", "tests.authserver.admin", "expire", token],
            cwd=ROOT,
            env=self.env,
            check=True,
        )


@dataclass(frozen=True)
class JwtIssuer:
    """The minimal JWT issuer (its own key, JWKS and metadata)."""

    url: str
    client = ("jwt-client", "jwt-client-secret")

    @property
    def issuer(self) -> str:
        return self.url

    def token(
        self, username: str, resource: str, scope: str = "mcp:tools", **extra: Any
    ) -> str:
        form = {
            "grant_type": "client_credentials",
            "sub": username,
            "scope": scope,
            "resource": resource,
            **{k: str(v) for k, v in extra.items()},
        }
        return _token(f"{self.url}/token", form, self.client)


def _token(url: str, form: dict[str, str], client: tuple[str, str]) -> str:
    response = httpx2.post(url, data=form, auth=client, timeout=10)
    response.raise_for_status()
    return str(response.json()["access_token"])


@contextmanager
def oauth_toolkit(tmp: Path) -> Iterator[OAuthToolkit]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.authserver.settings",
        "AUTHSERVER_DB": str(tmp / "authserver.sqlite3"),
    }
    seed = [sys.executable, "-m", "tests.authserver.admin", "seed"]
    subprocess.run(seed, cwd=ROOT, env=env, check=True)
    port = free_port()
    command = [
        str(BIN / "gunicorn"),
        "tests.authserver.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
    ]
    with _process(command, env, tmp / "authserver.log", port):
        yield OAuthToolkit(f"http://127.0.0.1:{port}", env)


@contextmanager
def jwt_issuer(tmp: Path, name: str = "issuer") -> Iterator[JwtIssuer]:
    port = free_port()
    client_id, secret = JwtIssuer.client
    command = [
        sys.executable,
        "-m",
        "tests.authserver.jwt_issuer",
        str(port),
        client_id,
        secret,
    ]
    with _process(command, dict(os.environ), tmp / f"{name}.log", port):
        yield JwtIssuer(f"http://127.0.0.1:{port}")


@contextmanager
def _process(
    command: list[str], env: dict[str, str], log_path: Path, port: int
) -> Iterator[None]:
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            wait_for_port(port, process)
            yield
        finally:
            process.terminate()
            process.wait(timeout=10)
