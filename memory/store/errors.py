"""What the fact store refuses, as exceptions: every error its modules raise beyond memory.db's.

Each derives from ``memory.db.MemoryStoreError`` (and from ``LookupError`` or ``ValueError``
where callers catch those), so a front end maps all of them at one boundary. The message is
for a person: what happened and what became of the request.

What it must never do: hold logic or import more than memory.db (every part of the store, and
each front end, imports these without pulling in the database work), or carry a fact's text in
a message: the messages name ids, limits and field names only.
"""

from __future__ import annotations

from memory.db import MemoryStoreError


class CredentialRefused(MemoryStoreError):
    """The refuse hook found a credential in text about to be written; nothing was written."""


class FactNotFoundError(MemoryStoreError, LookupError):
    """No fact (or anchor) with that id."""


class AnchorNotFoundError(FactNotFoundError):
    """No anchor with that id."""


class FactStateError(MemoryStoreError, ValueError):
    """The fact is not in a state that allows this (e.g. rejecting an active fact)."""


class InvalidInputError(MemoryStoreError, ValueError):
    """Text or arguments the store will not write (empty, too long, a past expiry, ...)."""


class ImportFormatError(MemoryStoreError, ValueError):
    """An import document that is not a Chamberlain memory export this version understands."""
