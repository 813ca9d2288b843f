"""A real keyring backend that keeps passwords in a dict, for tests (never the system's)."""

from __future__ import annotations

from keyring.backend import KeyringBackend


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
