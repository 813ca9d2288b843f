"""Real keyring backends for tests (never the system's): one that keeps passwords in a dict, one
that never answers."""

from __future__ import annotations

import threading
from typing import NoReturn

from keyring.backend import KeyringBackend
from keyring.errors import KeyringError


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


class HangingKeyring(KeyringBackend):
    """A real keyring backend whose every call blocks, as a Secret Service that never answers
    does (a hung keyring daemon; D-Bus would give up only after 120 s).

    Named in PYTHON_KEYRING_BACKEND (`tests.support.keyring.HangingKeyring`), keyring loads it in
    a subprocess exactly as it loads the system's backend; there it blocks for good. In the test
    process, `release()` lets every blocked call end (with an error) once the test is over.
    """

    priority = 1
    _released = threading.Event()

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    @classmethod
    def release(cls) -> None:
        cls._released.set()

    @classmethod
    def reset(cls) -> None:
        cls._released = threading.Event()

    def _hang(self) -> NoReturn:
        self.calls += 1
        self._released.wait()
        raise KeyringError("the hanging test keyring was released")

    def get_password(self, service: str, username: str) -> str | None:
        self._hang()

    def set_password(self, service: str, username: str, password: str) -> None:
        self._hang()

    def delete_password(self, service: str, username: str) -> None:
        self._hang()
