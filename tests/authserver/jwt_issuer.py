"""A minimal JWT authorization server, run as its own process by the tests.

    python -m tests.authserver.jwt_issuer PORT CLIENT_ID CLIENT_SECRET

It generates its own RSA key at start and serves RFC 8414 and OpenID
metadata, its JWKS and a token endpoint for the client-credentials grant.
The token request names the subject (``sub``), the ``resource`` (RFC 8707;
it becomes ``aud``), the ``scope`` and, for tests, ``expires_in`` (which may
be negative). It is a test double of an identity provider, not a product.
"""

from __future__ import annotations

import base64
import hmac
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from tests.oauth_keys import mint, new_key, public_jwk

KID = "issuer-key-1"


class Issuer:
    def __init__(self, base: str, client_id: str, client_secret: str) -> None:
        self.base = base
        self.client = (client_id, client_secret)
        self.key = new_key()

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.base,
            "jwks_uri": f"{self.base}/jwks",
            "token_endpoint": f"{self.base}/token",
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "scopes_supported": ["mcp:tools", "mcp:tools:read"],
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [public_jwk(self.key, KID)]}

    def token(self, form: dict[str, str], authorization: str) -> dict[str, Any] | None:
        if not self._client_ok(authorization) or "resource" not in form:
            return None
        now = int(time.time())
        lifetime = int(form.get("expires_in", "300"))
        payload = {
            "iss": self.base,
            "sub": form.get("sub", self.client[0]),
            "aud": form["resource"],
            "client_id": self.client[0],
            "scope": form.get("scope", "mcp:tools"),
            "iat": now,
            "exp": now + lifetime,
        }
        token = mint(self.key, KID, payload)
        return {"access_token": token, "token_type": "Bearer", "expires_in": lifetime}

    def _client_ok(self, authorization: str) -> bool:
        scheme, _, encoded = authorization.partition(" ")
        if scheme.lower() != "basic":
            return False
        expected = ":".join(self.client).encode()
        return hmac.compare_digest(base64.b64decode(encoded), expected)


def handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            documents = {
                "/.well-known/oauth-authorization-server": issuer.metadata,
                "/.well-known/openid-configuration": issuer.metadata,
                "/jwks": issuer.jwks,
            }
            document = documents.get(self.path)
            self._send(200, document()) if document else self._send(404, {})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length).decode()
            form = {k: v[0] for k, v in parse_qs(body).items()}
            answer = None
            if self.path == "/token":
                answer = issuer.token(form, self.headers.get("Authorization", ""))
            if answer is None:
                self._send(400, {"error": "invalid_request"})
            else:
                self._send(200, answer)

        def _send(self, status: int, document: dict[str, Any]) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


def main(port: int, client_id: str, client_secret: str) -> None:
    issuer = Issuer(f"http://127.0.0.1:{port}", client_id, client_secret)
    server = ThreadingHTTPServer(("127.0.0.1", port), handler(issuer))
    server.serve_forever()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3])
