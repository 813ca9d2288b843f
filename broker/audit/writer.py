"""AuditLog: appends hash-chained events to the audit log, one JSON line per pipeline stage.

Each turn writes one JSON line per pipeline stage (router output, policy decision, permission
checks and grants, tool calls, executor response, post-hook summary) to a file under the home
directory, usually ``<home>/audit.jsonl``. Every line carries the SHA-256 of the line before it
(``broker.audit.format``), and a small head file (``audit.jsonl.head``) records the last
sequence number and hash, signed when the writer has the install's audit key
(``broker.audit.macs``), so ``verify`` detects an edited, removed, reordered or forged line and
a log cut short at the end. ``tail`` shows the newest events without reading the whole file.

A line that cannot be written raises AuditWriteError, so the turn ends as failed rather than
running unaudited. The next writer keeps the torn bytes such a failure leaves, finishes them
with a newline and records them in an AUDIT_FAULT line (``broker.audit.recovery``), which
verify reports until the user acknowledges it (``AuditLog.acknowledge``, a signed AUDIT_ACK).

It must never write data that has not been through ``redact``, never let another writer's line
interleave with its own, and never write an AUDIT_FAULT or AUDIT_ACK for a caller.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from broker.audit.errors import AuditWriteError, cannot_write
from broker.audit.events import AuditEvent, AuditFault, JSONValue
from broker.audit.files import O_BINARY, anchor_path, lock_path
from broker.audit.format import GENESIS, canonical, interrupted_append, record_line
from broker.audit.macs import Head, ack_mac
from broker.audit.recovery import ChainEnd, find_chain_end, take_over_signing
from broker.audit.redaction import MAX_KEY, digest_json, redact_mapping
from broker.audit.sidecars import HeadFile, write_anchor
from broker.filelock import keep_folder_owner
from broker.filelock import lock as _lock
from broker.filelock import unlock as _unlock
from core.clock import Clock, SystemClock

log = logging.getLogger("chamberlain.broker.audit")

# One event's data, serialised, may not exceed this; beyond it the data is replaced by a digest.
MAX_DATA_CHARS = 64 * 1024


class AuditLog:
    """Appends hash-chained events to one log file; safe across threads and processes.

    Writers serialise on an advisory lock on a sidecar file (``audit.jsonl.lock``): flock on
    POSIX, msvcrt byte locking on Windows. The last seq and hash are kept in memory; after
    taking the lock the writer checks the file's size and identity, and only when another
    writer has appended (or the file was replaced) does it re-read the end of the log and the
    head file. Each line is written with one os.write in O_APPEND mode.

    ``key`` (the install secret's audit key, ``InstallSecret.audit_key``) signs the head and
    anchors the log; without one the head is plain, as tests and tools with no secret write it.

    ``durable=True`` fsyncs the log and the head after every append. The default does not:
    os.write hands the line to the kernel before append returns, so it survives a crash of
    Chamberlain itself; only a power cut or kernel crash can lose the last events, and then the
    head file (or its absence) makes the loss visible to verify. An fsync costs milliseconds on
    many disks, paid on every tool call, which the user would feel.
    """

    def __init__(
        self,
        path: Path,
        clock: Clock | None = None,
        *,
        durable: bool = False,
        key: bytes | None = None,
    ) -> None:
        self.path = Path(path)
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.durable = durable
        # With a key the head is signed and the log anchored (see broker.audit.macs).
        self._key = key
        self._genesis: str | None = None
        self._broken: str | None = None
        self._unsigned_until: int | None = None
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._head = HeadFile(self.path)
        self._pid = -1
        self._seq = 0
        self._prev = GENESIS
        # The log's size and inode after our last write; anything else means someone else wrote.
        self._size = -1
        self._ino = -1

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        with self._thread_lock:
            self._close_fds()

    def __del__(self) -> None:
        # A log dropped without close() must not keep its three descriptors open.
        with contextlib.suppress(AttributeError, OSError):
            self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._lock_fd = None
        self._head.close()
        self._size = -1

    def _open(self) -> int:
        """Open the files: on first use, or in a forked child, which shares the parent's open
        files (and therefore its flock) and needs its own. Returns the lock's descriptor."""
        self._close_fds()
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock_fd = os.open(lock_path(self.path), os.O_RDWR | os.O_CREAT | O_BINARY, 0o600)
        self._lock_fd = lock_fd
        keep_folder_owner(lock_fd, self.path.parent)
        self._open_log()
        self._pid = os.getpid()
        return lock_fd

    def _open_log(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        # O_RDWR only so the writer can read the end of the log back; O_APPEND makes every
        # write land at the end whatever the read offset is.
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | O_BINARY, 0o600)
        self._size = -1
        keep_folder_owner(self._fd, self.path.parent)

    def append(
        self, event: AuditEvent | str, /, turn_id: str | None = None, **data: object
    ) -> dict[str, Any]:
        """Write one event and return the record as written (including its hash).

        ``event`` is positional-only so that data may carry a field named "event".

        ``data`` goes through ``redact`` first. Raises ValueError for an event name not in
        AuditEvent (or one only the log itself writes), and AuditWriteError (a StorageError and
        an OSError) when the line cannot be written, a full disk say: an audit that silently
        stops is worse than a failed turn, so the session ends the turn as failed. A line cut
        short that way is recorded as an AUDIT_FAULT by the next append (see ``_sync_state``).
        A line that was written but whose head update failed is not an error: the event is in
        the log, verify notes the head one line behind, and the next append brings the head up
        to date.
        """
        try:
            name = AuditEvent(event)
        except ValueError:
            raise ValueError(f"unknown audit event {event!r}; add it to AuditEvent") from None
        if name in (AuditEvent.AUDIT_FAULT, AuditEvent.AUDIT_ACK):
            raise ValueError(f"{name} is written by the audit log itself")
        clean = redact_mapping(data, 0)
        data_json = canonical(clean)
        if len(data_json) > MAX_DATA_CHARS:
            clean = {"oversize": True, "digest": digest_json(data_json)}
            data_json = canonical(clean)
        turn = None if turn_id is None else str(turn_id)[:MAX_KEY]
        # The lock by hand, not through _locked: this is the hot path, paid on every stage.
        with self._thread_lock:
            try:
                lock_fd = self._lock_fd if self._pid == os.getpid() else None
                if self._fd is None or lock_fd is None:
                    lock_fd = self._open()
                _lock(lock_fd, shared=False)
            except OSError as exc:
                # A read-only home, a full disk, a folder that belongs to someone else.
                raise cannot_write(self.path, exc) from exc
            try:
                lead = self._sync_state()
                return self._write_record(name, turn, clean, lead, data_json)
            except OSError as exc:
                raise cannot_write(self.path, exc) from exc
            finally:
                _unlock(lock_fd)

    def acknowledge(self, faults: Sequence[AuditFault]) -> dict[str, Any]:
        """Append the user's acknowledgement of ``faults`` (from ``verify``) as an AUDIT_ACK.

        The record names each fault by its AUDIT_FAULT line's seq and hash and, with a key,
        carries a MAC over them, so verify accepts it only from this install; it stays in the
        chain like any other line. After it, verify passes and says which faults were accepted.
        """
        if not faults:
            raise ValueError("no faults to acknowledge")
        named: list[JSONValue] = [{"seq": f.seq, "hash": f.hash} for f in faults]
        data: dict[str, JSONValue] = {"faults": named}
        if self._key is not None:
            data["mac"] = ack_mac(named, self._key)
        with self._locked():
            lead = self._sync_state()
            return self._write_record(AuditEvent.AUDIT_ACK, None, data, lead)

    def repair(self) -> None:
        """Without appending an event: record an interrupted append at the end of the log as an
        AUDIT_FAULT (so it can be acknowledged), and bring a head one line behind up to date.

        Anything else wrong with the files is left for verify to report.
        """
        with self._locked():
            self._size = -1  # re-read the end of the log whoever wrote last
            self._sync_state()  # records the fault, if the end looks like a cut append
            self._size = -1  # a partial line that is not a cut append stays as it is
            self._write_head()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock:
            try:
                lock_fd = self._lock_fd if self._pid == os.getpid() else None
                if self._fd is None or lock_fd is None:
                    lock_fd = self._open()
                _lock(lock_fd, shared=False)
            except OSError as exc:
                raise cannot_write(self.path, exc) from exc
            try:
                yield
            finally:
                _unlock(lock_fd)

    def _write_record(
        self,
        name: AuditEvent,
        turn: str | None,
        clean: Mapping[str, object],
        lead: bytes,
        data_json: str | None = None,
    ) -> dict[str, Any]:
        """Write ``lead`` and one record, then the head. Called with the lock held and the
        state synced. ``data_json`` is ``clean`` in canonical form, when the caller has it."""
        assert self._fd is not None
        if data_json is None:
            data_json = canonical(clean)
        ts = datetime.fromtimestamp(self.clock.now(), UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        seq, prev = self._seq + 1, self._prev
        hash_, line = record_line(data_json, str(name), ts, turn, seq, prev)
        self._write_all(lead + line)
        if self.durable:
            os.fsync(self._fd)
        self._seq, self._prev = seq, hash_
        self._size += len(lead) + len(line)
        try:
            self._write_head()
        except AuditWriteError as exc:
            # The event is in the log; only the head lags, by one line, which verify notes and
            # the next append repairs. Failing the turn for it would lose nothing but the turn.
            log.info(
                "audit line %d of %s was written but its head could not be updated (%s); "
                "the next append brings the head up to date",
                seq,
                self.path,
                exc.strerror or exc,
            )
        return {
            "seq": seq,
            "ts": ts,
            "event": str(name),
            "turn": turn,
            "data": clean,
            "prev": prev,
            "hash": hash_,
        }

    def _write_all(self, line: bytes) -> None:
        assert self._fd is not None
        written = 0
        try:
            written = os.write(self._fd, line)
            while written < len(line):
                # Only a full disk or a signal gets here; we hold the lock, so finishing the
                # line with more writes cannot interleave with another Chamberlain writer.
                log.info("short write to the audit log (%d of %d bytes)", written, len(line))
                written += os.write(self._fd, line[written:])
        except OSError as exc:
            # Part of the line may be on disk: re-read the end of the log before the next write.
            # Logged at info: the caller reports the error, once, in words.
            self._size = -1
            log.info("audit log %s could not be written: %s", self.path, exc)
            raise cannot_write(self.path, exc) from exc

    def _write_head(self) -> None:
        """Write the head for the last line written (see ``HeadFile.write``)."""
        content = Head(self._seq, self._prev)
        if self._key is not None:
            assert self._genesis is not None
            content = Head(
                self._seq,
                self._prev,
                self._genesis,
                broken=self._broken,
                unsigned_until=self._unsigned_until,
            ).signed(self._key)
        self._head.write(content, durable=self.durable)

    def _sync_state(self) -> bytes:
        """Make the in-memory seq/hash match the file; return bytes to write before the line.

        Called with the lock held. Cheap when we were the last writer: one fstat and one stat.

        When the log ends in an append that was cut short (a crash or a full disk left part of
        a line, see ``looks_torn``) and the head does not vouch for anything past the last
        intact line, this writes an AUDIT_FAULT record first: the torn bytes stay where they
        are, finished with a newline, and the record names their offset and digest, so verify
        reports them as a known interrupted append the user can acknowledge, not as an edit.
        """
        assert self._fd is not None
        st = os.fstat(self._fd)
        try:
            on_disk = os.stat(self.path)
        except FileNotFoundError:
            on_disk = None
        if on_disk is None or (on_disk.st_dev, on_disk.st_ino) != (st.st_dev, st.st_ino):
            log.warning("audit log %s was moved or deleted; reopening it", self.path)
            self._open_log()
            assert self._fd is not None
            st = os.fstat(self._fd)
        if st.st_size == self._size and st.st_ino == self._ino:
            return b""
        torn_from = self._load_state(st.st_size)
        self._size, self._ino = st.st_size, st.st_ino
        lead = b""
        if st.st_size > 0 and self._read_at(st.st_size - 1, 1) != b"\n":
            lead = b"\n"  # finish the cut line so ours stays whole
        if torn_from is not None:
            torn = self._read_at(torn_from, st.st_size - torn_from) + lead
            log.info(
                "audit log %s: an append was cut short at byte %d; recording it",
                self.path,
                torn_from,
            )
            fault = interrupted_append(torn_from, self._seq, torn)
            self._write_record(AuditEvent.AUDIT_FAULT, None, fault, lead)
            return b""
        if lead:
            # Not a cut append (or the head vouches for more): verify will report the line.
            log.error("audit log %s ends in a partial line", self.path)
        return lead

    def _read_at(self, offset: int, length: int) -> bytes:
        assert self._fd is not None
        os.lseek(self._fd, offset, os.SEEK_SET)  # reads only: O_APPEND writes ignore the offset
        chunks = []
        while length > 0:
            chunk = os.read(self._fd, length)
            if not chunk:
                break
            chunks.append(chunk)
            length -= len(chunk)
        return b"".join(chunks)

    def _load_state(self, size: int) -> int | None:
        """Continue the chain where the files say it goes on (see ``find_chain_end``) and, with a
        key, take the signing state over; return where a cut append's bytes begin, or None."""
        end = find_chain_end(self.path, self._read_at, size)
        self._seq, self._prev = end.seq, end.prev
        if self._key is not None:
            self._take_over_signing(size, end, self._key)
        return end.torn_from

    def _take_over_signing(self, size: int, end: ChainEnd, key: bytes) -> None:
        signing = take_over_signing(self.path, size, end, key)
        self._genesis = signing.genesis
        self._broken = signing.broken
        self._unsigned_until = signing.unsigned_until
        if signing.anchor_raw is None:
            # The head first, then the anchor: a crash between them leaves a signed empty head
            # and no anchor, which the next writer completes (see head_problem).
            if end.head_raw is None and size == 0:
                self._write_head()
            anchor = anchor_path(self.path)
            write_anchor(anchor, self.path, signing.genesis, key, durable=self.durable)
