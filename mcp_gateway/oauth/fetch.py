"""HTTP calls to authorization servers, with a finite timeout.

Every failure to get a usable answer is ``AuthUnavailable``: the view
answers 503 and runs nothing, so an unreachable server never fails open.
"""

from __future__ import annotations

from typing import Any

import httpx2

from mcp_gateway.conf import gateway_settings


class AuthUnavailable(Exception):
    """An authorization server (metadata, JWKS, introspection) did not answer."""


def get_json(url: str) -> dict[str, Any]:
    """GET a JSON object.

    Raises:
        AuthUnavailable: network failure, non-200 status or not a JSON object.
    """
    return _json(_send("GET", url))


def post_form(url: str, data: dict[str, str], auth: tuple[str, str]) -> dict[str, Any]:
    """POST a form with HTTP Basic client authentication; return its JSON object.

    Raises:
        AuthUnavailable: network failure, non-200 status or not a JSON object.
    """
    return _json(_send("POST", url, data=data, auth=auth))


def _send(method: str, url: str, **kwargs: Any) -> httpx2.Response:
    timeout = gateway_settings().JWKS_TIMEOUT_SECONDS
    headers = {"Accept": "application/json"}
    try:
        return httpx2.request(
            method,
            url,
            headers=headers,
            timeout=timeout,
            follow_redirects=False,
            **kwargs,
        )
    except httpx2.HTTPError as exc:
        raise AuthUnavailable(f"{method} {url}: {type(exc).__name__}") from exc


def _json(response: httpx2.Response) -> dict[str, Any]:
    if response.status_code != 200:
        raise AuthUnavailable(f"{response.url}: HTTP {response.status_code}")
    try:
        value = response.json()
    except ValueError as exc:
        raise AuthUnavailable(f"{response.url}: not JSON") from exc
    if not isinstance(value, dict):
        raise AuthUnavailable(f"{response.url}: not a JSON object")
    return value
