"""verify: checks the whole chain, the head and the anchor; an interrupted append is not an edit.

Every line carries the SHA-256 of the line before it and the head file records the last
sequence number and hash, so ``verify`` detects an edited, removed, reordered or forged line and
a log cut short at the end; with the install's audit key it also checks the head's and the
anchor's MACs (see ``broker.audit.macs``).

Faults are told apart from edits. A last line cut mid-write (a crash or a full disk) that the
head does not vouch for is reported as an interrupted append, not tampering; a head one line
behind (a crash between the line and the head) is OK with a note. Torn bytes the next writer
recorded in an AUDIT_FAULT line (their offset and digest) are reported until the user
acknowledges them with a signed AUDIT_ACK line (``AuditLog.acknowledge``); both stay in the
chain.

It must never write, create or repair a file: it reads the log once and judges what it read.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from broker.audit.events import AuditEvent, AuditFault
from broker.audit.files import snapshot
from broker.audit.format import (
    GENESIS,
    HEX64,
    INTERRUPTED,
    MAX_TAIL_SCAN,
    RECORD_KEYS,
    canonical,
    hash_record,
    interrupted_append,
    looks_torn,
)
from broker.audit.macs import ack_mac, head_problem, parse_head
from core.words import counted


@dataclasses.dataclass(frozen=True)
class VerifyResult:
    """The outcome of ``verify``.

    ``lines`` counts the lines that passed the chain checks. ``first_bad_line`` is 1-based; for
    a log cut short it is the number of the first missing line (one past the end), and it is
    None when the fault is not in any one line (head file missing or unreadable).
    """

    ok: bool
    lines: int
    first_bad_line: int | None
    reason: str
    # The log ends in an append that was cut short (a crash or a full disk) and no writer has
    # recorded it yet; the lines before it are intact. Not ok, but not tampering either.
    torn_tail: bool = False
    # Appends that were cut short and recorded by the next writer (AUDIT_FAULT), oldest first,
    # acknowledged or not.
    faults: tuple[AuditFault, ...] = ()
    # Not ok only because of interrupted appends (a torn tail, unacknowledged faults): nothing
    # was edited or removed. Acknowledging them (``AuditLog.acknowledge``) makes verify pass.
    interrupted: bool = False

    @property
    def unacknowledged(self) -> tuple[AuditFault, ...]:
        return tuple(f for f in self.faults if f.acknowledged_at is None)


def _check_line(raw: bytes, lineno: int, seq: int, prev: str) -> tuple[str | None, dict[str, Any]]:
    """(reason it is bad or None, the record) for line ``lineno`` expected to carry ``seq``."""
    if raw == b"":
        return f"line {lineno}: empty line", {}
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: an edit nested it absurdly deep
        return f"line {lineno}: not valid JSON (the line was edited)", {}
    if not isinstance(obj, dict) or set(obj) != RECORD_KEYS:
        return f"line {lineno}: not an audit record (wrong fields)", {}
    try:
        written = canonical(obj).encode("ascii")
    except ValueError:
        return f"line {lineno}: not in canonical form (the line was edited)", {}
    if written != raw:
        return f"line {lineno}: not in canonical form (the line was edited)", {}
    hash_ = obj["hash"]
    if not isinstance(hash_, str) or hash_ != hash_record(obj):
        return f"line {lineno}: hash does not match the line's content (the line was edited)", {}
    got = obj["seq"]
    if type(got) is not int:
        return f"line {lineno}: seq is not a number", {}
    if got > seq:
        return (
            f"line {lineno}: seq {got} where {seq} was expected (a line was removed or moved)",
            {},
        )
    if got < seq:
        return (
            f"line {lineno}: seq {got} where {seq} was expected (a line was duplicated or moved)",
            {},
        )
    if obj["prev"] != prev:
        what = "the chain start" if lineno == 1 else f"the hash of line {lineno - 1}"
        return f"line {lineno}: prev does not match {what} (the chain is broken)", {}
    return None, obj


@dataclasses.dataclass
class _Gap:
    """Lines that look like a cut append, waiting for the AUDIT_FAULT record that describes
    them (the next intact line must be it)."""

    offset: int
    line: int
    reason: str
    pieces: list[bytes] = dataclasses.field(default_factory=list)
    size: int = 0

    def explained_by(self, record: Mapping[str, Any]) -> bool:
        torn = b"".join(self.pieces)
        if record["event"] != AuditEvent.AUDIT_FAULT:
            return False
        return bool(record["data"] == interrupted_append(self.offset, record["seq"] - 1, torn))


def _take_acknowledgement(
    data: object, faults: list[AuditFault], key: bytes | None, lineno: int
) -> str | None:
    """Mark the faults an AUDIT_ACK names as acknowledged at ``lineno``; or say what is wrong
    with it (nothing is marked then)."""
    not_ours = f"line {lineno}: an acknowledgement Chamberlain did not write"
    if not isinstance(data, dict) or not {"faults"} <= set(data) <= {"faults", "mac"}:
        return not_ours
    named = data["faults"]
    if not isinstance(named, list) or not named:
        return not_ours
    index = {(f.seq, f.hash): i for i, f in enumerate(faults)}
    chosen: list[int] = []
    for item in named:
        if not isinstance(item, dict) or set(item) != {"seq", "hash"}:
            return not_ours
        seq, hash_ = item["seq"], item["hash"]
        i = index.get((seq, hash_)) if type(seq) is int and isinstance(hash_, str) else None
        if i is None or i in chosen or faults[i].acknowledged_at is not None:
            return (
                f"line {lineno}: an acknowledgement names a fault this log does not record, "
                "or one already acknowledged"
            )
        chosen.append(i)
    mac = data.get("mac")
    if key is not None and not (
        isinstance(mac, str)
        and HEX64.fullmatch(mac)
        and hmac.compare_digest(mac, ack_mac(named, key))
    ):
        return (
            f"line {lineno}: an acknowledgement not signed with this install's key (forged, "
            "or copied from another home)"
        )
    for i in chosen:
        faults[i] = dataclasses.replace(faults[i], acknowledged_at=lineno)
    return None


def verify(path: Path, key: bytes | None = None) -> VerifyResult:
    """Check the whole chain, the head file and the anchor. Reads the log once, line by line.

    Fails on an edited line (hash mismatch, invalid JSON, or any byte that differs from the
    canonical form the writer produces), a removed, reordered or duplicated line (seq/prev),
    a line appended without the chain, and a log cut short at the end (the head file records
    a later line). A missing head file beside a non-empty log is a failure. An absent or empty
    log with no head file is fine (0 lines) unless an anchor file says this home had a log; an
    empty log whose head file records lines was emptied, and fails.

    Told apart from edits, without needing a later write:
    - a last line cut mid-write (no newline, the start of a record; see ``looks_torn``) that
      the head does not vouch for: not ok, ``torn_tail`` and ``interrupted`` set, "an append
      was interrupted (a crash or a full disk); the lines before it are intact";
    - a complete last line whose head was not yet updated (the head one line behind): ok, with
      a note naming the line;
    - torn bytes a later writer recorded with an AUDIT_FAULT right after them (offset and
      digest must match): listed in ``faults``; not ok (``interrupted``) until an AUDIT_ACK
      names them, then ok with a note. An AUDIT_FAULT with nothing torn before it, or an
      AUDIT_ACK naming a fault the log does not record, fails.

    With ``key`` (``InstallSecret.audit_key``) the head must be signed with it and match the
    anchor, a head that a writer marked as tampered with fails, and an acknowledgement must
    carry this key's MAC. Without it the MACs cannot be checked; everything else still is.
    """
    path = Path(path)
    size, head_raw, anchor_raw = snapshot(path)
    head = parse_head(head_raw) if head_raw is not None else None
    if not size:
        if head_raw is None:
            if anchor_raw is not None:
                return VerifyResult(
                    False,
                    0,
                    None,
                    "the audit log and its head file are gone, but the anchor file records that "
                    "this home had one: they were deleted",
                )
            return VerifyResult(True, 0, None, "ok")
        if head is None:
            return VerifyResult(False, 0, None, "head file unreadable or edited")
        if head.seq > 0:
            why = f"log truncated: the head file records seq {head.seq}, the log is empty"
            return VerifyResult(False, 0, 1, why)
        problem = head_problem(head, anchor_raw, key, 0)
        return VerifyResult(problem is None, 0, None, problem or "ok")

    seq, prev, good, lineno, consumed = 1, GENESIS, 0, 0, 0
    before_last = GENESIS  # the hash of the record before the last intact one
    last_line = 0  # the line number of the last intact record
    gap: _Gap | None = None
    # (seq of an AUDIT_FAULT record, how many torn lines came before it): line = seq + these.
    skipped: list[tuple[int, int]] = []
    faults: list[AuditFault] = []
    torn_tail = False
    with open(path, "rb") as f:
        for raw in f:
            if consumed + len(raw) > size:
                raw = raw[: size - consumed]  # appended after the snapshot: not ours to judge
            start = consumed
            consumed += len(raw)
            lineno += 1
            whole = raw.endswith(b"\n")
            body = raw[:-1] if whole else raw
            reason, record = _check_line(body, lineno, seq, prev)
            if not whole:
                # The last line. A record cut mid-write, or cut just before its newline.
                if reason is None or looks_torn(body):
                    if gap is None:
                        gap = _Gap(start, lineno, f"line {lineno} is incomplete")
                    torn_tail = True
                    break
                if gap is None:
                    gap = _Gap(
                        start,
                        lineno,
                        f"line {lineno}: incomplete (no newline at the end) and not the start "
                        "of a record (the line was edited)",
                    )
                return VerifyResult(False, good, gap.line, gap.reason)
            if reason is not None:
                if gap is None:
                    gap = _Gap(start, lineno, reason)
                gap.pieces.append(raw)
                gap.size += len(raw)
                if not looks_torn(body) or gap.size > MAX_TAIL_SCAN:
                    return VerifyResult(False, good, gap.line, gap.reason)
                continue
            if gap is not None:
                if not gap.explained_by(record):
                    return VerifyResult(False, good, gap.line, gap.reason)
                faults.append(AuditFault(gap.line, lineno, seq, record["hash"]))
                skipped.append((seq, lineno - gap.line))
                gap = None
            elif record["event"] == AuditEvent.AUDIT_FAULT:
                why = (
                    f"line {lineno}: records an interrupted append that is not there (the cut "
                    "line was removed, or the record was added by hand)"
                )
                return VerifyResult(False, good, lineno, why)
            elif record["event"] == AuditEvent.AUDIT_ACK:
                problem = _take_acknowledgement(record["data"], faults, key, lineno)
                if problem is not None:
                    return VerifyResult(False, good, lineno, problem)
            good, last_line, seq = good + 1, lineno, seq + 1
            before_last, prev = prev, record["hash"]
            if consumed >= size:
                break
    if gap is not None and not torn_tail:
        # Torn-looking lines that end the log with their newlines and nothing recording them:
        # only a writer that wrote its newline and no more leaves that; the next one records it.
        return VerifyResult(False, good, gap.line, gap.reason)

    def line_of(s: int) -> int:
        return s + sum(n for fault_seq, n in skipped if fault_seq <= s)

    last_seq = seq - 1
    if head_raw is None and anchor_raw is None and last_seq == 0 and gap is not None:
        # A writer without a key writes its first head after its first line: that line was cut.
        why = f"line {gap.line} is incomplete: {INTERRUPTED}; no line was written before it"
        return VerifyResult(False, 0, gap.line, why, torn_tail=True, interrupted=True)
    if head_raw is None:
        return VerifyResult(False, good, None, "head file missing")
    if head is None:
        return VerifyResult(False, good, None, "head file unreadable or edited")
    problem = head_problem(head, anchor_raw, key, size)
    if problem is not None:
        return VerifyResult(False, good, None, problem)
    head_seq, head_hash = head.seq, head.hash
    if head_seq > last_seq:
        return VerifyResult(
            False,
            good,
            gap.line if gap is not None else last_line + 1,
            f"log truncated: the head file records seq {head_seq}, the log ends at seq {last_seq}",
        )
    if head_seq < last_seq - 1:
        return VerifyResult(
            False,
            good,
            line_of(head_seq + 1),
            f"the head file records seq {head_seq} but the log continues to seq {last_seq} "
            "(lines were added without updating the head, or the head was edited)",
        )
    behind = head_seq == last_seq - 1
    if head_hash != (before_last if behind else prev):
        line = line_of(head_seq)
        return VerifyResult(
            False,
            good,
            line,
            f"the head file does not match line {line} (the line or the head was edited)",
        )

    notes = []
    if head.unsigned_until:
        notes.append(
            f"lines 1-{line_of(head.unsigned_until)} were written before the audit head was "
            "signed, so the head cannot vouch that none was cut from their end"
        )
    if behind:
        notes.append(
            f"line {last_line} was written but the head file not yet updated (a crash or a full "
            "disk between the two); the next append brings the head up to date"
        )
    acknowledged = [f for f in faults if f.acknowledged_at is not None]
    if acknowledged:
        notes.append(
            f"{counted(len(acknowledged), 'acknowledged fault')}: "
            + "; ".join(
                f"line {f.line}: {INTERRUPTED}, acknowledged at line {f.acknowledged_at}"
                for f in acknowledged
            )
        )
    pending = [f for f in faults if f.acknowledged_at is None]
    if pending or torn_tail:
        found = [
            f"line {f.line}: {INTERRUPTED}; recorded at line {f.recorded_at}, not yet acknowledged"
            for f in pending
        ]
        if gap is not None:
            found.append(
                f"line {gap.line} is incomplete: {INTERRUPTED}; the lines before it are intact"
            )
        first = pending[0].line if pending else gap.line if gap is not None else None
        return VerifyResult(
            False,
            good,
            first,
            "; ".join(found + notes),
            torn_tail=torn_tail,
            faults=tuple(faults),
            interrupted=True,
        )
    reason = "; ".join(["ok", *notes])
    return VerifyResult(True, good, None, reason, faults=tuple(faults))
