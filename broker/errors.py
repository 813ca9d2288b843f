"""Turning failures into sentences a user can act on, at the boundaries that report them."""

from __future__ import annotations

from broker.policy import PolicyError
from broker.runner import SelfTestError
from broker.settings import SettingsError


def user_message(exc: BaseException) -> str | None:
    """A plain message for a failure we expect; None for a bug (let it show its traceback)."""
    from broker.audit.errors import AuditWriteError
    from broker.keys import KeyFileError, MemoryKeyUnavailable
    from broker.permissions import PermissionStoreError
    from memory.db import MemoryStoreError

    expected = (
        SettingsError
        | PolicyError
        | SelfTestError
        | PermissionStoreError
        | KeyFileError
        | MemoryKeyUnavailable
        | MemoryStoreError
        | AuditWriteError
    )
    if isinstance(exc, expected):
        return str(exc)
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc} — check the home directory's owner"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    return None
