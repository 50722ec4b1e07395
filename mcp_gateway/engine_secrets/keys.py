"""The keys of the secret store: Fernet keys from settings, newest first.

A message about a key names its position and its fingerprint (a truncated
SHA-256 of the key, which tells nothing about it), never the key.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from mcp_gateway.conf import SETTING_NAME, gateway_settings

SETTING = "MCP_GATEWAY['SECRET_KEYS']"


class SecretKeyError(ImproperlyConfigured):
    """The keys are malformed, missing, or do not open the stored secrets."""


@dataclass(frozen=True)
class Keyring:
    fernet: MultiFernet
    ids: tuple[str, ...]
    """Each key's fingerprint, newest (the one that encrypts) first."""

    @property
    def newest(self) -> str:
        return self.ids[0]

    def encrypt(self, plaintext: str) -> str:
        return self.fernet.encrypt(plaintext.encode("utf-8")).decode("ascii")

    def decrypt(self, ciphertext: str) -> str:
        try:
            return self.fernet.decrypt(ciphertext.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            raise SecretKeyError(
                f"A stored secret does not open with {SETTING}: the key that "
                "encrypted it is missing, or the row was altered."
            ) from None

    def rotate(self, ciphertext: str) -> str:
        """The same secret encrypted under the newest key."""
        try:
            token = self.fernet.rotate(ciphertext.encode("ascii"))
        except InvalidToken:
            raise SecretKeyError(
                f"A stored secret does not open with {SETTING}."
            ) from None
        return token.decode("ascii")


def fingerprint(key: bytes) -> str:
    return hashlib.sha256(b"mcp-gateway secret key\x00" + key).hexdigest()[:16]


def parse(keys: tuple[str, ...] | list[str] | str) -> Keyring | None:
    """The keyring of ``keys``, or ``None`` when none are set.

    Raises:
        SecretKeyError: an entry is not a Fernet key (its position only).
    """
    if isinstance(keys, str):
        keys = [part for part in keys.split(",") if part.strip()]
    entries = [str(key).strip() for key in keys]
    if not entries:
        return None
    fernets, ids = [], []
    for position, entry in enumerate(entries):
        try:
            fernets.append(Fernet(entry.encode("ascii")))
        except (ValueError, TypeError, UnicodeError):
            raise SecretKeyError(
                f"{SETTING} entry {position} (0 is the newest) is not a Fernet "
                "key: 32 bytes, URL-safe base64-encoded (44 characters). "
                'Make one with `python -c "from cryptography.fernet import '
                'Fernet; print(Fernet.generate_key().decode())"`.'
            ) from None
        ids.append(fingerprint(entry.encode("ascii")))
    if len(set(ids)) != len(ids):
        raise SecretKeyError(f"{SETTING} lists the same key twice.")
    return Keyring(MultiFernet(fernets), tuple(ids))


@functools.cache
def keyring() -> Keyring | None:
    """This process's keyring from settings (``None``: no keys set).

    Raises:
        SecretKeyError: a key is malformed.
    """
    return parse(gateway_settings().SECRET_KEYS)


def require() -> Keyring:
    """The keyring, or a clear error when no keys are set."""
    ring = keyring()
    if ring is None:
        raise SecretKeyError(
            f"{SETTING} (env MCP_SECRET_KEYS) is empty: set a Fernet key "
            "before storing engine secrets."
        )
    return ring


@receiver(setting_changed)
def _reset(*, setting: str, **kwargs: object) -> None:
    if setting == SETTING_NAME:
        keyring.cache_clear()
