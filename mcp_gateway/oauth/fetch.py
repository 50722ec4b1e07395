"""HTTP calls to authorization servers: vetted, bounded, JSON objects only.

Every failure to get a usable answer is ``AuthUnavailable``: the view
answers 503 and runs nothing, so an unreachable server never fails open.
``net`` decides where a call may connect and bounds its time and size.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urlencode, urlsplit

from mcp_gateway.oauth import net
from mcp_gateway.observability import metrics

JSON_HEADERS = (("Accept", "application/json"), ("Accept-Encoding", "identity"))


class AuthUnavailable(Exception):
    """An authorization server (metadata, JWKS, introspection) did not answer."""


def get_json(url: str) -> dict[str, Any]:
    """GET a JSON object.

    Raises:
        AuthUnavailable: refused, failed, non-200 status or not a JSON object.
    """
    return _json(url, _send("GET", url))


def post_form(url: str, data: dict[str, str], auth: tuple[str, str]) -> dict[str, Any]:
    """POST a form with HTTP Basic client authentication; return its JSON object.

    Raises:
        AuthUnavailable: refused, failed, non-200 status or not a JSON object.
    """
    headers = (
        *JSON_HEADERS,
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Authorization", _basic(*auth)),
    )
    return _json(url, _send("POST", url, headers, urlencode(data).encode()))


def _basic(client_id: str, secret: str) -> str:
    pair = f"{client_id}:{secret}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def _send(
    method: str,
    url: str,
    headers: tuple[tuple[str, str], ...] = JSON_HEADERS,
    content: bytes | None = None,
) -> net.Answer:
    try:
        answer = net.fetch(method, url, headers=headers, content=content)
    except net.FetchFailed as exc:
        metrics.idp_fetch(_host(url), failed=True)
        raise AuthUnavailable(str(exc)) from exc
    metrics.idp_fetch(_host(url), failed=answer.status != 200)
    return answer


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


def _json(url: str, answer: net.Answer) -> dict[str, Any]:
    if answer.status != 200:
        raise AuthUnavailable(f"{url}: HTTP {answer.status}")
    try:
        value = json.loads(answer.body)
    except (ValueError, RecursionError) as exc:
        raise AuthUnavailable(f"{url}: not JSON") from exc
    if not isinstance(value, dict):
        raise AuthUnavailable(f"{url}: not a JSON object")
    return value
