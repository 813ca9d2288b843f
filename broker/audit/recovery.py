"""What a writer finds when the audit files are not as it left them, and where the chain goes on.

A writer that takes the lock after another writer (or a crash) reads the end of the log and the
head file to learn the last seq and hash. Faults are told apart from edits: a last line cut
mid-write (a crash or a full disk) that the head does not vouch for is a cut append, whose bytes
the writer keeps, finishes with a newline and records in an AUDIT_FAULT line; a head one line
behind (a crash between the line and the head) is brought up to date. A log and head that
disagree otherwise were cut short or edited: the chain continues from the head, so the gap stays
in it and verify keeps reporting it.

A signing writer never signs over evidence: when the head or the anchor is missing, unsigned,
edited or from another log, the problem goes into the head's ``broken`` field, which every later
head carries, so verify keeps failing however many turns follow.

It must never write: it reads and decides, and the writer (holding the lock) does the writing.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
from collections.abc import Callable
from pathlib import Path

from broker.audit.files import anchor_path, head_path, lines_backward
from broker.audit.format import GENESIS, MAX_TAIL_SCAN, looks_torn, parse_record
from broker.audit.macs import Head, head_mac_ok, head_problem, parse_anchor, parse_head

log = logging.getLogger("chamberlain.broker.audit")


@dataclasses.dataclass(frozen=True)
class ChainEnd:
    """Where the chain continues, and what the writer found on the way."""

    seq: int
    prev: str
    # The offset where the bytes of an append that was cut short begin, when the log ends in
    # some right after the line the chain continues from; otherwise None.
    torn_from: int | None
    # The head file's bytes (None: no head file) and their reading (None: none, or not a head).
    head_raw: bytes | None
    head: Head | None


def find_chain_end(path: Path, read_at: Callable[[int, int], bytes], size: int) -> ChainEnd:
    """Find where the chain of the log at `path` continues, from its end and its head file.

    `read_at(offset, length)` reads the log, `size` bytes long. The torn bytes are those of a
    cut append only when they are one or more pieces that each look like the start of a record
    line (see ``looks_torn``), right after the line the chain continues from.
    """
    tail: tuple[int, str] | None = None
    scanned = 0
    ends_in_newline = size == 0 or read_at(size - 1, 1) == b"\n"
    # Where the bytes after the last intact record begin, and whether they all look torn.
    torn_from: int | None = None
    all_torn = True
    cursor, first = size, True
    for raw in lines_backward(read_at, size):
        end = cursor if first and not ends_in_newline else cursor - 1
        cursor = end - len(raw)
        scanned += len(raw) + 1
        record = parse_record(raw)
        if record is not None:
            tail = record["seq"], record["hash"]
            torn_from = min(end + 1, size)
            break
        first = False
        all_torn = all_torn and looks_torn(raw)
        if scanned > MAX_TAIL_SCAN:
            break
    else:
        torn_from = 0  # no intact record at all: every byte is after "the start"
    try:
        head_raw: bytes | None = head_path(path).read_bytes()
    except FileNotFoundError:
        head_raw = None
    parsed = parse_head(head_raw) if head_raw is not None else None
    if head_raw is not None and parsed is None:
        log.error("audit head file %s is unreadable or edited", head_path(path))
    head = (parsed.seq, parsed.hash) if parsed is not None else None

    if head is None or head == tail:
        chosen = tail
    elif tail is None:
        chosen = head
    elif head[0] == tail[0] - 1:
        chosen = tail  # a writer died between the line and the head update
    else:
        # The log was cut short, edited, or deleted behind our back. Continue from the head
        # so the gap stays in the chain and verify keeps reporting it.
        log.error(
            "audit log %s and its head file disagree (log ends at seq %d, head says %d)",
            path,
            tail[0],
            head[0],
        )
        chosen = head
    seq, prev = chosen if chosen is not None else (0, GENESIS)
    # Only a cut append the head does not vouch past: a head ahead of the last intact line
    # means lines were cut off, and that stays a failure.
    continues_from_tail = (seq, prev) == (tail or (0, GENESIS))
    if torn_from is None or torn_from >= size or not all_torn or not continues_from_tail:
        torn_from = None
    return ChainEnd(seq, prev, torn_from, head_raw, parsed)


@dataclasses.dataclass(frozen=True)
class Signing:
    """What a signing writer carries into every head it writes, taken over from the files."""

    genesis: str
    # What the writer found wrong with the files (the first finding stays), or None.
    broken: str | None
    # Lines 1..N were written before this log's heads were signed.
    unsigned_until: int | None
    # The anchor file: None when there is none yet, which the writer then writes.
    anchor_raw: bytes | None


def take_over_signing(path: Path, size: int, end: ChainEnd, key: bytes) -> Signing:
    """Take the genesis id and flags over from the files, or find out they were tampered with.

    `end` is what ``find_chain_end`` found for the log at `path`, `size` bytes long.
    """
    anchor_raw: bytes | None
    try:
        anchor_raw = anchor_path(path).read_bytes()
    except FileNotFoundError:
        anchor_raw = None
    head_raw, head = end.head_raw, end.head
    adopted = False
    problem: str | None
    if head_raw is None:
        if anchor_raw is None and size == 0:
            problem = None  # a new log
        elif size == 0:
            problem = "the log and its head file were gone"
        else:
            problem = "the head file was missing"
    elif head is None:
        problem = "the head file was unreadable or edited"
    elif head.genesis is None and anchor_raw is None:
        # A log from before heads were signed: nothing tells it from one whose anchor was
        # deleted and head replaced by an unsigned one, so verify names the lines it adopts.
        problem, adopted = None, True
    else:
        problem = head_problem(head, anchor_raw, key, size)
    trusted = head if head is not None and head.genesis and head_mac_ok(head, key) else None
    recorded = parse_anchor(anchor_raw, key) if anchor_raw is not None else None
    genesis: str
    if recorded is not None:
        genesis = recorded
    elif trusted is not None and trusted.genesis is not None:
        genesis = trusted.genesis
    else:
        genesis = secrets.token_hex(16)
    broken: str | None
    if problem is not None:
        if trusted is not None and trusted.broken is not None:
            broken = trusted.broken  # the first finding stays
        else:
            broken = f"before line {end.seq + 1} was written, {problem}"
            log.error("audit log %s was tampered with: %s", path, problem)
    else:
        broken = trusted.broken if trusted is not None else None
    if adopted:
        unsigned_until: int | None = end.seq
        log.warning("signing the head of %s, written before heads were signed", path)
    else:
        unsigned_until = trusted.unsigned_until if trusted is not None else None
    return Signing(genesis, broken, unsigned_until, anchor_raw)
