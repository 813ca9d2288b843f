"""The per-install token secret: from the keyring when one works, else a private file that says so.

conftest sets PYTHON_KEYRING_BACKEND to keyring's fail backend, so by default every test here
meets "no system keyring". The keyring tests install a real in-memory backend (a KeyringBackend
subclass defined below) through keyring's own API, and restore the previous one afterwards.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

import keyring
import pytest
from keyring.backend import KeyringBackend

from broker.keys import KEY_BYTES, SERVICE, load_install_secret


class DictKeyring(KeyringBackend):
    """A real keyring backend that keeps passwords in a dict, for this process only."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.store[(service, username)]


@pytest.fixture
def memory_keyring() -> Iterator[DictKeyring]:
    previous = keyring.get_keyring()
    backend = DictKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


# --- no keyring: the file fallback -------------------------------------------------------------


def test_without_a_keyring_the_secret_falls_back_to_a_private_file(tmp_path):
    secret = load_install_secret(tmp_path)
    path = tmp_path / "token.key"
    assert secret.in_keyring is False
    assert secret.source.startswith(f"file {path} (no system keyring: ")
    assert "fail" in secret.source  # which backend was unusable
    assert len(secret.key) == KEY_BYTES
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_text("ascii") == secret.key.hex()


def test_the_fallback_returns_the_same_key_every_time(tmp_path):
    first = load_install_secret(tmp_path)
    second = load_install_secret(tmp_path)
    assert second.key == first.key
    assert load_install_secret(tmp_path / "other-home").key != first.key


def test_the_fallback_creates_a_missing_home(tmp_path):
    home = tmp_path / "not" / "yet"
    secret = load_install_secret(home)
    assert (home / "token.key").read_text("ascii") == secret.key.hex()


@pytest.mark.parametrize(
    "content",
    [b"not hex at all", b"abcd", b"\xff\xfe garbage", b""],
    ids=["not-hex", "too-short", "not-ascii", "empty"],
)
def test_a_corrupt_key_file_is_a_clear_error_and_is_kept(tmp_path, content):
    path = tmp_path / "token.key"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"token\.key") as caught:
        load_install_secret(tmp_path)
    message = str(caught.value)
    assert str(path) in message
    assert f"{KEY_BYTES}-byte" in message
    assert "remove the file" in message.lower()  # says what to do about it
    assert path.read_bytes() == content


# --- a working keyring -------------------------------------------------------------------------


def test_with_a_keyring_the_secret_lives_there_and_no_file_is_written(tmp_path, memory_keyring):
    secret = load_install_secret(tmp_path)
    assert secret.in_keyring is True
    assert secret.source == f"keyring ({__name__}.DictKeyring)"
    assert len(secret.key) == KEY_BYTES
    [(service, _user)] = memory_keyring.store
    assert service == SERVICE
    assert memory_keyring.store[(service, _user)] == secret.key.hex()
    assert not (tmp_path / "token.key").exists()
    assert list(tmp_path.iterdir()) == []


def test_the_keyring_secret_is_stable_and_per_home(tmp_path, memory_keyring):
    first = load_install_secret(tmp_path / "a")
    again = load_install_secret(tmp_path / "a")
    other = load_install_secret(tmp_path / "b")
    assert again.key == first.key
    assert other.key != first.key
    assert len(memory_keyring.store) == 2
