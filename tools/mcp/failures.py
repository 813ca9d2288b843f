"""MCP servers that failed to connect lately, remembered across processes, and what a turn is
told about a server whose tools it did not have.

Each `chamberlain ask` is a process of its own: without a memory shared between them, a server
that hangs at start would make every file or system request wait out its connect timeout
again. So a failed connection is written down (`mcp-failures.json` under the Chamberlain home:
which server, a digest of its settings, what went wrong, when, and how long to wait before the
next try), the next process skips the server until then, and a successful connection — in
particular `chamberlain mcp test NAME` and Settings' Test, which always try — clears it.

The file can only make Chamberlain try a server *less*; it must never add a server, a tool, a
permission or anything a model reads. A file planted by someone else is bounded too: an entry
counts only for the exact settings it was written for (their digest), only from a time that is
not in the future and for at most RETRY_AT_MOST_S, and its words are cleaned and cut before a
person sees them. Anything that is not a small regular JSON file of ours (a symlink, a FIFO, a
directory, garbage, too big) is read as empty; a file that cannot be written leaves each process
with its own memory, as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import math
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

if TYPE_CHECKING:
    # broker/types.py imports this module for every turn's result: nothing heavy at import.
    from tools.mcp.config import McpServerConfig

log = logging.getLogger("chamberlain.tools.mcp.failures")

FILE_NAME = "mcp-failures.json"
# After the n-th failed connection in a row, the next try waits RETRY_AFTER_S × 2^(n-1), up to
# RETRY_AT_MOST_S: a broken server is not waited for on every request, and one that was only
# down for a while is tried again soon.
RETRY_AFTER_S = 15.0
RETRY_AT_MOST_S = 600.0
# What is read of the file at most; ours holds a few hundred bytes per server.
MAX_FILE_BYTES = 64 * 1024
MAX_DETAIL_CHARS = 300
MAX_FAILURES = 64
# A record stamped a little in the future is taken (clocks of two processes agree); more is not.
CLOCK_SLACK_S = 5.0
# Waiting this long for another process's write is enough; then we go on without the lock.
LOCK_WAIT_S = 1.0

# What went wrong, for the front ends to word ("did not answer at start", "could not be started").
FailureKind = Literal["timeout", "stopped", "not_started", "unreachable", "flooded", "failed"]

_SERVER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,23}$")


def backoff_s(failures: int) -> float:
    """How long to wait before trying a server again after `failures` failures in a row."""
    exponent = min(max(failures - 1, 0), 16)
    return min(RETRY_AFTER_S * float(2**exponent), RETRY_AT_MOST_S)


def settings_digest(config: McpServerConfig) -> str:
    """A digest of a server's settings: a remembered failure counts for these settings only, so
    a person who fixes them gets a fresh try at once."""
    text = json.dumps(config.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def one_line(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """A server's words (or a file's) as one printable line for a person, cut at `limit`."""
    from tools.mcp.classify import clean_text

    return clean_text(" ".join(text.split()), limit)


class RememberedFailure(BaseModel):
    """One server's last failed connection, as the file holds it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    kind: FailureKind
    detail: str = ""
    # When it failed (seconds since the epoch: processes share no other clock).
    at: float
    failures: int = Field(ge=1, le=MAX_FAILURES)
    wait_s: float = Field(gt=0, le=RETRY_AT_MOST_S)

    @field_validator("at")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value) or value < 0:
            raise ValueError("not a time")
        return value

    @field_validator("detail")
    @classmethod
    def _clean(cls, value: str) -> str:
        return one_line(value)

    @property
    def retry_at(self) -> float:
        return self.at + self.wait_s


class McpLeftOut(BaseModel):
    """A server whose tools a turn did not have, and why: a structured notice on the turn that
    each front end words (the CLI on stderr, the chat window below the reply)."""

    model_config = ConfigDict(frozen=True)

    server: str
    kind: FailureKind
    # The hub's own sentence about it ("it did not answer within 30 s"), one cleaned line.
    detail: str
    connect_timeout_s: float
    # When the failure happened (seconds since the epoch), and whether that was before this
    # request (remembered from an earlier request or process) rather than while it started.
    failed_at: float | None = None
    earlier: bool = False
    # From when the server is tried again by itself (seconds since the epoch), if known.
    retry_at: float | None = None


class FailureBook:
    """The shared record of failed connections: one small JSON file, replaced atomically,
    read-modify-written under an advisory lock so that two processes do not undo each other."""

    def __init__(self, path: Path, now: Callable[[], float] = time.time) -> None:
        self.path = path
        self.now = now

    @classmethod
    def in_home(cls, home: Path, now: Callable[[], float] = time.time) -> FailureBook:
        return cls(home / FILE_NAME, now)

    # ---- what the file says ---------------------------------------------------------------

    def recorded(self, server: str, digest: str) -> RememberedFailure | None:
        """The failure recorded for `server` with these settings, if it is believable (not from
        the future), whether or not its wait is over."""
        record = self._read().get(server)
        if record is None or record.digest != digest:
            return None
        if record.at > self.now() + CLOCK_SLACK_S:
            return None  # written by a clock we cannot agree with, or by someone else
        return record

    def waiting(self, server: str, digest: str) -> RememberedFailure | None:
        """The recorded failure that says not to try `server` yet, or None (try it)."""
        record = self.recorded(server, digest)
        if record is None or self.now() >= record.retry_at:
            return None
        return record

    # ---- changing it ----------------------------------------------------------------------

    def remember(
        self, server: str, digest: str, kind: FailureKind, detail: str, failures: int
    ) -> RememberedFailure:
        """Record a failed connection; the next process waits `backoff_s(failures)` for it."""
        failures = max(1, min(failures, MAX_FAILURES))
        record = RememberedFailure(
            digest=digest,
            kind=kind,
            detail=detail,
            at=self.now(),
            failures=failures,
            wait_s=backoff_s(failures),
        )
        with self._locked():
            records = self._read()
            records[server] = record
            self._write(records)
        return record

    def forget(self, server: str) -> None:
        """The server connected: nothing to skip any more."""
        with self._locked():
            records = self._read()
            if records.pop(server, None) is not None:
                self._write(records)

    # ---- the file -------------------------------------------------------------------------

    def _read(self) -> dict[str, RememberedFailure]:
        data = _read_small_file(self.path)
        if data is None:
            return {}
        try:
            raw = json.loads(data)
        except ValueError:
            return {}
        servers = raw.get("servers") if isinstance(raw, dict) and raw.get("version") == 1 else None
        if not isinstance(servers, dict):
            return {}
        records: dict[str, RememberedFailure] = {}
        for name, entry in servers.items():
            if not isinstance(name, str) or not _SERVER_NAME.match(name):
                continue
            try:
                records[name] = RememberedFailure.model_validate(entry)
            except ValidationError:
                continue
        return records

    def _write(self, records: dict[str, RememberedFailure]) -> None:
        payload = {
            "version": 1,
            "servers": {name: r.model_dump(mode="json") for name, r in sorted(records.items())},
        }
        import tempfile

        folder = self.path.parent
        try:
            # A new file beside it, then renamed over it: a reader sees the old or the new one,
            # never half of one, and a symlink planted at the path is replaced, not followed.
            fd, temporary = tempfile.mkstemp(prefix=".mcp-failures.", suffix=".tmp", dir=folder)
        except OSError as exc:
            log.info("MCP failures not remembered across processes: %s", exc)
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(payload, out, indent=1)
            os.replace(temporary, self.path)
        except OSError as exc:
            log.info("MCP failures not remembered across processes: %s", exc)
            with contextlib.suppress(OSError):
                os.unlink(temporary)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An advisory lock beside the file, waited for a moment at most: it only keeps two
        writers from undoing each other, and a lock someone holds for ever must not hold us."""
        lock = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(
                lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600
            )
        except OSError:
            yield
            return
        try:
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.01)
                except OSError:
                    break
            yield
        finally:
            os.close(fd)  # closing releases the lock


def _read_small_file(path: Path) -> bytes | None:
    """The bytes of `path` if it is a regular file of at most MAX_FILE_BYTES, else None. Never
    follows a symlink and never waits (a FIFO planted there is not read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        return os.read(fd, MAX_FILE_BYTES + 1)[: MAX_FILE_BYTES + 1]
    except OSError:
        return None
    finally:
        os.close(fd)
