"""The per-install secret that signs permission tokens.

It lives in the system keyring. Where no keyring works (a headless box, a test run), it falls back
to a file under the home directory readable only by the user, and says so: `doctor` reports which
one is in use. It is never logged, never sent to a model, never written to the audit log.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("chamberlain.broker.keys")

SERVICE = "chamberlain"
KEY_BYTES = 32


class KeyFileError(ValueError):
    """The fallback key file exists but does not hold a key; it is kept for the user to see."""


@dataclass(frozen=True)
class InstallSecret:
    key: bytes
    # "keyring (<backend>)" or "file <path> (no system keyring available: <why>)"
    source: str

    @property
    def in_keyring(self) -> bool:
        return self.source.startswith("keyring")


def _keyring_user(home: Path) -> str:
    # One secret per home directory, so test homes and real homes never share a key.
    digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
    return f"token-secret-{digest}"


def _from_keyring(home: Path) -> tuple[bytes | None, str]:
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None, "the keyring package is not installed"
    backend = keyring.get_keyring()
    priority = getattr(backend, "priority", 0)
    name = type(backend).__module__ + "." + type(backend).__name__
    if priority is None or priority <= 0 or "fail" in name:
        return None, f"no usable keyring backend ({name})"
    user = _keyring_user(home)
    try:
        stored = keyring.get_password(SERVICE, user)
        if stored is None:
            stored = secrets.token_hex(KEY_BYTES)
            keyring.set_password(SERVICE, user, stored)
        return bytes.fromhex(stored), f"keyring ({name})"
    except (KeyringError, ValueError, OSError) as exc:
        return None, f"the keyring ({name}) failed: {exc}"


def _from_file(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        try:
            data = bytes.fromhex(path.read_text("ascii").strip())
        except ValueError:  # UnicodeDecodeError included: not hex text at all
            data = b""
        if len(data) != KEY_BYTES:
            # The secret only signs permission tokens, which last one session: a new one
            # loses nothing, but replacing the file silently would hide whatever damaged it.
            raise KeyFileError(
                f"{path} is damaged: it should hold a {KEY_BYTES}-byte key as hex text. "
                "Remove the file and Chamberlain will create a new one"
            )
        return data
    key = secrets.token_bytes(KEY_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key.hex())
    return key


def load_install_secret(home: Path) -> InstallSecret:
    key, why = _from_keyring(home)
    if key is not None:
        return InstallSecret(key, why)
    path = home / "token.key"
    log.info("token secret kept in %s: %s", path, why)
    return InstallSecret(_from_file(path), f"file {path} (no system keyring: {why})")
