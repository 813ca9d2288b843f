"""Places no tool may ever reach: credential stores and Chamberlain's own files.

One definition, used by every tool group: the file tools refuse a path inside one, the command
rules refuse a command that names one, and the command sandbox never mounts them (and covers
them over when a granted folder contains one). A grant cannot widen this list, whoever approves
it: a hostile model with every prompt approved still cannot read a key or plant a grant.

Credentials are matched by location, not by content: `~/.ssh` is private whether or not the file
the call names holds a key today. The list errs towards hiding: a program that needs one of these
places (ssh, gpg, a browser) is run by the user outside Chamberlain.

This module never reads a file; it only answers "is this path private, and why".
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tools.paths import components, is_within

# Credentials and private data under a home folder (relative to it).
CREDENTIAL_HOME_PATHS: tuple[str, ...] = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".pgpass", ".my.cnf",
    ".password-store", ".git-credentials", ".npmrc", ".pypirc", ".vault-token", ".pki",
    ".config/gcloud", ".config/gh", ".config/hub", ".config/git/credentials",
    ".config/rclone", ".config/op", ".config/1Password", ".config/Bitwarden",
    ".config/keepassxc", ".config/Signal", ".config/google-chrome", ".config/chromium",
    ".config/BraveSoftware", ".config/microsoft-edge", ".config/vivaldi", ".config/opera",
    ".mozilla", ".thunderbird", ".local/share/keyrings", ".local/share/kwalletd",
    ".cargo/credentials", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json",
    ".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
    ".sqlite_history", ".lesshst", ".viminfo", ".local/share/fish/fish_history",
)  # fmt: skip

# System files holding password hashes, host keys or privilege rules.
CREDENTIAL_SYSTEM_PATHS: tuple[str, ...] = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
    "/etc/sudoers.d", "/etc/ssh", "/etc/security/opasswd",
    # Session sockets: the D-Bus session bus (and through it the keyring), ssh and gpg agents.
    "/run", "/var/run",
)  # fmt: skip


@dataclass(frozen=True)
class PrivateHit:
    """Why a path is out of reach: the private place it lies in, and what kind of place it is."""

    place: Path
    kind: str  # "credentials" or "chamberlain"

    def describe(self) -> str:
        if self.kind == "chamberlain":
            return f"{self.place} holds Chamberlain's own files (keys, grants, audit, memory)"
        return f"{self.place} holds credentials or private data"


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return path


@functools.lru_cache(maxsize=32)
def credential_places(home: Path) -> tuple[Path, ...]:
    """Every credential location for `home` (and for the process's own home, if different)."""
    homes = dict.fromkeys([home, _real(home), Path(os.path.expanduser("~"))])
    places = [h / p for h in homes for p in CREDENTIAL_HOME_PATHS]
    places += [Path(p) for p in CREDENTIAL_SYSTEM_PATHS]
    # Symlinked credential folders (~/.ssh -> /secure/ssh) are private where they really are too.
    places += [_real(p) for p in places if p.is_symlink()]
    return tuple(dict.fromkeys(places))


@dataclass(frozen=True)
class PrivatePlaces:
    """The private places of one installation: credential stores and Chamberlain's home."""

    home: Path
    app_dirs: tuple[Path, ...] = ()

    @property
    def credentials(self) -> tuple[Path, ...]:
        return credential_places(self.home)

    def all(self) -> tuple[Path, ...]:
        return (*self.app_dirs, *self.credentials)

    def hit(self, path: Path) -> PrivateHit | None:
        """The private place `path` (already resolved) lies in or is, or None."""
        try:
            parts = components(path)
        except ValueError:
            return None
        for kind, places in (("chamberlain", self.app_dirs), ("credentials", self.credentials)):
            for place in places:
                # Compared as `within` does, each place's parts worked out once: every file
                # a tool touches is checked against some sixty places.
                prefix = _parts(place)
                if prefix is not None and parts[: len(prefix)] == prefix:
                    return PrivateHit(place, kind)
        return None

    def inside(self, folder: Path) -> list[Path]:
        """The private places that lie strictly inside `folder` (to be covered over there)."""
        found: list[Path] = []
        for place in self.all():
            if place != folder and within(place, folder):
                found.append(place)
        return found


@functools.lru_cache(maxsize=1024)
def _parts(place: Path) -> tuple[str, ...] | None:
    try:
        return components(place)
    except ValueError:
        return None


def within(path: Path, prefix: Path) -> bool:
    """`is_within` for paths that may not compare (relative, with `..`): those are not within."""
    try:
        return is_within(path, prefix)
    except ValueError:
        return False


def private_places(home: Path, app_dirs: Iterable[Path] = ()) -> PrivatePlaces:
    """The private places for a user whose home is `home` and whose Chamberlain lives in
    `app_dirs` (its data home; several when the settings live elsewhere)."""
    dirs = tuple(dict.fromkeys(_real(Path(d)) for d in app_dirs))
    return PrivatePlaces(home=_real(home), app_dirs=dirs)
