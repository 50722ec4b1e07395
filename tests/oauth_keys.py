"""Signing keys and JWTs for the OAuth tests (in-process and the issuer)."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def new_key(alg: str = "RS256") -> PrivateKey:
    if alg.startswith("ES"):
        return ec.generate_private_key(ec.SECP256R1())
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key: PrivateKey, kid: str, alg: str = "RS256") -> dict[str, Any]:
    public = key.public_key()
    if isinstance(public, ec.EllipticCurvePublicKey):
        jwk = json.loads(ECAlgorithm.to_jwk(public))
    else:
        jwk = json.loads(RSAAlgorithm.to_jwk(public))
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


def claims(issuer: str, audience: str | list[str], subject: str, **extra: Any) -> Any:
    now = int(time.time())
    base = {"iss": issuer, "aud": audience, "sub": subject, "iat": now}
    return {**base, "exp": now + 300, "scope": "mcp:tools", **extra}


def mint(key: PrivateKey, kid: str, payload: dict[str, Any], alg: str = "RS256") -> str:
    payload = {k: v for k, v in payload.items() if v is not None}
    return jwt.encode(payload, key, algorithm=alg, headers={"kid": kid})
