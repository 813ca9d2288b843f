"""Conversations kept across restarts: the desktop chat's history, in the memory database.

``ConversationStore`` keeps conversations and their messages in the same file as the facts
(``memory.db``), under the same key, through the same connection and lock as the
``MemoryStore`` it is given: one writer, one place to unlock, one thing to back up. The tables
are created by ``memory/db.py``'s schema migrations (schema 2).

A message is stored exactly as given (not stripped), up to ``MAX_MESSAGE_CHARS``; bad input (too
long, text that is not valid UTF-8, an unknown role, metadata that is not JSON) raises
``InvalidInputError`` before anything is written, so the conversation keeps everything it held.
Deleting is for good: the rows go in one transaction, ``secure_delete`` (on for every memory
connection) zeroes the freed space, and the WAL is checkpointed and truncated, so the text is
not left in either file. ``prune`` deletes, the same way, whatever has not been touched for the
retention the user chose (``chat.retention_days``).

What it must never do: write anything for a temporary chat. The store cannot tell a temporary
chat from another, so that rule is the caller's: a temporary chat never calls ``start`` or
``add``, and reading (``conversations``, ``messages``) never writes. Nor may it index or copy a
message's text anywhere else (no full-text index, no event holding it), decide what is worth
keeping, or import anything from the broker, the app or Qt.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from memory.db import Error as DriverError
from memory.db import MemoryStoreError
from memory.store.errors import InvalidInputError
from memory.store.facts import MemoryStore

log = logging.getLogger("chamberlain.memory.conversations")

__all__ = [
    "MAX_MESSAGE_CHARS",
    "MAX_META_CHARS",
    "MAX_TITLE_CHARS",
    "ChatMessage",
    "ConversationInfo",
    "ConversationNotFoundError",
    "ConversationStore",
    "InvalidInputError",
    "Role",
]

Role = Literal["user", "assistant", "tool", "notice"]
ROLES: tuple[str, ...] = get_args(Role)

# About 50 pages of text: far more than any reply or command output the chat shows (those are
# capped well below it), small enough that one message never makes the file balloon.
MAX_MESSAGE_CHARS = 200_000
MAX_META_CHARS = 64 * 1024
# A title is a label in a list: longer ones are shortened (with "…"), never refused, because
# callers make titles from the first thing the user typed.
MAX_TITLE_CHARS = 120
UNTITLED = "New conversation"
DAY_S = 86400.0


class ConversationNotFoundError(MemoryStoreError, KeyError):
    """No conversation with that id (never started, or deleted). A ``KeyError`` too."""

    def __str__(self) -> str:  # KeyError's own str() would put the message in quotes
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class ConversationInfo:
    """A stored conversation's header (its messages are read with ``messages``)."""

    id: str
    title: str
    created_at: float
    updated_at: float
    # How many messages it holds.
    messages: int


@dataclass(frozen=True)
class ChatMessage:
    id: str
    conversation_id: str
    role: Role
    text: str
    created_at: float
    meta: dict[str, Any] = field(default_factory=dict)


def _new_id() -> str:
    return secrets.token_hex(8)


def _require_utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"The {what} holds characters that are not valid UTF-8 text (bytes from a file or "
            "terminal in another encoding?); nothing was saved."
        ) from None


def _title(title: object) -> str:
    if not isinstance(title, str):
        raise InvalidInputError("A conversation's title must be a string; nothing was saved.")
    text = " ".join(title.split())
    _require_utf8(text, "conversation title")
    if len(text) > MAX_TITLE_CHARS:
        text = text[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return text or UNTITLED


def _message_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidInputError("A chat message must be text; nothing was saved.")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInputError(
            f"The message is too long to keep in the chat history ({len(text)} characters; at "
            f"most {MAX_MESSAGE_CHARS}); nothing was saved, and the conversation is unchanged."
        )
    _require_utf8(text, "message")
    return text


def _role(role: object) -> Role:
    if role not in ROLES:
        raise InvalidInputError(
            f"{role!r} is not a chat message role (one of {', '.join(ROLES)}); nothing was saved."
        )
    return cast(Role, role)


def _meta_json(meta: Mapping[str, Any] | None) -> str:
    if meta is None:
        return "{}"
    if not isinstance(meta, Mapping):
        raise InvalidInputError("A message's metadata must be a mapping; nothing was saved.")
    try:
        encoded = json.dumps(dict(meta), ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"A message's metadata must be plain JSON data ({exc}); nothing was saved."
        ) from None
    if len(encoded) > MAX_META_CHARS:
        raise InvalidInputError(
            f"A message's metadata is too large ({len(encoded)} characters as JSON; at most "
            f"{MAX_META_CHARS}); nothing was saved."
        )
    _require_utf8(encoded, "message's metadata")
    return encoded


_SELECT_CONVERSATION = (
    "SELECT c.id, c.title, c.created_at, c.updated_at, "
    "(SELECT count(*) FROM chat_messages m WHERE m.conversation_id = c.id) "
    "FROM conversations c"
)


def _conversation(row: tuple[Any, ...]) -> ConversationInfo:
    return ConversationInfo(
        id=str(row[0]),
        title=str(row[1]),
        created_at=float(row[2]),
        updated_at=float(row[3]),
        messages=int(row[4]),
    )


@contextlib.contextmanager
def _said(outcome: str) -> Iterator[None]:
    """A database error the fact store's translation left as the driver's (a missing table, a
    read-only file) as a MemoryStoreError too, saying `outcome`: a front end catches only
    Chamberlain's errors and the disk's."""
    try:
        yield
    except (DriverError, sqlite3.Error) as exc:
        raise MemoryStoreError(
            f"The conversation history in the memory database could not be used ({exc}); {outcome}."
        ) from exc


class ConversationStore:
    """Conversations and their messages, beside the facts. See the module docstring."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with _said("nothing was read"), self._store.read_transaction() as conn:
            yield conn

    @contextlib.contextmanager
    def _writing(self, outcome: str) -> Iterator[sqlite3.Connection]:
        with _said(outcome), self._store.write_transaction(outcome) as conn:
            yield conn

    def _scrub_wal(self) -> None:
        with _said("it was deleted, but its text may stay in the write-ahead log for a while"):
            self._store.scrub_wal()

    # --- reading ----------------------------------------------------------------------------

    def conversations(self, limit: int = 200) -> list[ConversationInfo]:
        """The most recently updated conversations first (at most ``limit``)."""
        with self._reading() as conn:
            rows = conn.execute(
                f"{_SELECT_CONVERSATION} ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ?",
                (max(0, int(limit)),),
            ).fetchall()
        return [_conversation(r) for r in rows]

    def get(self, conversation_id: str) -> ConversationInfo | None:
        """One conversation, or None when there is none with that id."""
        with self._reading() as conn:
            return self._fetch(conn, conversation_id)

    def messages(self, conversation_id: str) -> list[ChatMessage]:
        """A conversation's messages, oldest first. ConversationNotFoundError when unknown."""
        with self._reading() as conn:
            self._require(conn, conversation_id)
            rows = conn.execute(
                "SELECT id, conversation_id, role, text, created_at, meta FROM chat_messages "
                "WHERE conversation_id = ? ORDER BY seq",
                (conversation_id,),
            ).fetchall()
        return [
            ChatMessage(
                id=str(r[0]),
                conversation_id=str(r[1]),
                role=cast(Role, r[2]),
                text=str(r[3]),
                created_at=float(r[4]),
                meta=json.loads(r[5]),
            )
            for r in rows
        ]

    # --- writing ----------------------------------------------------------------------------

    def start(self, title: str) -> ConversationInfo:
        """A new, empty conversation (a blank title becomes "New conversation")."""
        text = _title(title)
        now = self._store.now()
        conversation = ConversationInfo(
            id=_new_id(), title=text, created_at=now, updated_at=now, messages=0
        )
        with self._writing("the conversation was not saved") as conn:
            conn.execute(
                "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (conversation.id, conversation.title, now, now),
            )
        return conversation

    def add(
        self,
        conversation_id: str,
        role: str,
        text: str,
        meta: Mapping[str, Any] | None = None,
    ) -> ChatMessage:
        """Append a message and mark the conversation as updated now.

        Raises InvalidInputError (nothing written) for an unknown role, text over
        MAX_MESSAGE_CHARS or not valid UTF-8, or metadata that is not JSON data; and
        ConversationNotFoundError for an unknown conversation.
        """
        checked_role = _role(role)
        body = _message_text(text)
        meta_json = _meta_json(meta)
        now = self._store.now()
        message = ChatMessage(
            id=_new_id(),
            conversation_id=conversation_id,
            role=checked_role,
            text=body,
            created_at=now,
            meta=json.loads(meta_json),
        )
        with self._writing("the message was not saved") as conn:
            self._require(conn, conversation_id)
            conn.execute(
                "INSERT INTO chat_messages (id, conversation_id, role, text, meta, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (message.id, conversation_id, checked_role, body, meta_json, now),
            )
            conn.execute(
                "UPDATE conversations SET updated_at = max(updated_at, ?) WHERE id = ?",
                (now, conversation_id),
            )
        return message

    def add_many(
        self,
        conversation_id: str,
        messages: Sequence[tuple[str, str, Mapping[str, Any] | None]],
    ) -> list[ChatMessage]:
        """Append several messages (role, text, metadata), in order, in one transaction: all
        of them are kept or none (a turn's message, its tool calls and its reply together).

        Every message is checked first; the errors are ``add``'s, and nothing is written then.
        """
        checked = [
            (_role(role), _message_text(text), _meta_json(meta)) for role, text, meta in messages
        ]
        now = self._store.now()
        kept = [
            ChatMessage(
                id=_new_id(),
                conversation_id=conversation_id,
                role=role,
                text=body,
                created_at=now,
                meta=json.loads(meta_json),
            )
            for role, body, meta_json in checked
        ]
        with self._writing("the messages were not saved") as conn:
            self._require(conn, conversation_id)
            conn.executemany(
                "INSERT INTO chat_messages (id, conversation_id, role, text, meta, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (m.id, conversation_id, m.role, m.text, meta_json, now)
                    for m, (_, _, meta_json) in zip(kept, checked, strict=True)
                ],
            )
            conn.execute(
                "UPDATE conversations SET updated_at = max(updated_at, ?) WHERE id = ?",
                (now, conversation_id),
            )
        return kept

    def rename(self, conversation_id: str, title: str) -> None:
        """Give a conversation a new title (it does not count as activity for retention)."""
        text = _title(title)
        with self._writing("the title was not changed") as conn:
            self._require(conn, conversation_id)
            conn.execute("UPDATE conversations SET title = ? WHERE id = ?", (text, conversation_id))

    def delete(self, conversation_id: str) -> bool:
        """Delete a conversation and its messages for good; False when there was none."""
        with self._writing("nothing was deleted") as conn:
            deleted = self._delete(conn, [conversation_id])
        if deleted:
            self._scrub_wal()
        return bool(deleted)

    def prune(self, older_than_days: float, now: float | None = None) -> int:
        """Delete for good every conversation not updated for ``older_than_days`` days;
        returns how many. Zero or negative days means keep forever (deletes nothing)."""
        days = float(older_than_days)
        if not days > 0:  # NaN too: keep
            return 0
        cutoff = (self._store.now() if now is None else float(now)) - days * DAY_S
        with self._writing("nothing was deleted") as conn:
            stale = [
                str(r[0])
                for r in conn.execute(
                    "SELECT id FROM conversations WHERE updated_at < ?", (cutoff,)
                ).fetchall()
            ]
            deleted = self._delete(conn, stale)
        if deleted:
            self._scrub_wal()
            log.info("deleted %d conversations older than %g days", deleted, days)
        return deleted

    # --- plumbing ---------------------------------------------------------------------------

    @staticmethod
    def _fetch(conn: sqlite3.Connection, conversation_id: str) -> ConversationInfo | None:
        row = conn.execute(f"{_SELECT_CONVERSATION} WHERE c.id = ?", (conversation_id,)).fetchone()
        return _conversation(row) if row else None

    def _require(self, conn: sqlite3.Connection, conversation_id: str) -> ConversationInfo:
        found = self._fetch(conn, conversation_id)
        if found is None:
            raise ConversationNotFoundError(
                f"There is no conversation with id {conversation_id!r} (it was deleted, or "
                "never saved); nothing was changed."
            )
        return found

    @staticmethod
    def _delete(conn: sqlite3.Connection, ids: list[str]) -> int:
        deleted = 0
        for conversation_id in ids:
            # The messages first and by name: the cascade would do it, but only while
            # foreign keys are on, and this must not depend on a pragma.
            conn.execute("DELETE FROM chat_messages WHERE conversation_id = ?", (conversation_id,))
            deleted += conn.execute(
                "DELETE FROM conversations WHERE id = ?", (conversation_id,)
            ).rowcount
        return deleted
