"""The audit log: an append-only, hash-chained record of every stage of every turn.

Each turn writes one JSON line per pipeline stage (router output, policy decision, permission
checks and grants, tool calls, executor response, post-hook summary) to a file under the home
directory, usually ``<home>/audit.jsonl``. Every line carries the SHA-256 of the line before it,
and a small head file (``audit.jsonl.head``) records the last sequence number and hash, so
``verify`` detects an edited, removed, reordered or forged line and a log cut short at the end.
``tail`` shows the newest events without reading the whole file.

What it must never do: hold secrets, file contents, tool outputs or OCR text. Callers pass
``digest(content)`` (a SHA-256 and a length) for anything read from disk, the screen or a tool;
every value goes through ``redact`` before it is written, which blanks secret-looking keys and
values (passwords typed into command lines included), caps long strings and turns anything that
is not JSON into a string. Redaction is a safety net, not a licence to pass raw content.

The chain itself is not keyed; the head is. A writer given a key (the install secret's audit
key, as every Session's is) signs the head with HMAC-SHA256 and anchors the log: when it starts
a log it picks a random genesis id, writes it with its own MAC to ``audit.jsonl.anchor``, and
every head commits to that id. So, for anyone without the key:
- cutting lines off the end and rewriting the head fails (the head's MAC does not check);
- deleting the log and its head fails (the anchor says this home had a log);
- deleting or editing the anchor fails (a signed head needs its anchor).
A signing writer that finds any of these does not sign over the evidence: it records what it
found in the head's ``broken`` field, which every later head carries, so verify keeps failing
however many turns follow.

Faults are told apart from edits. A last line cut mid-write (a crash or a full disk) that the
head does not vouch for is reported as an interrupted append, not tampering; a head one line
behind (a crash between the line and the head) is OK with a note. The next writer keeps the
torn bytes, finishes them with a newline and records them in an AUDIT_FAULT line (their offset
and digest), which verify reports until the user acknowledges it with a signed AUDIT_ACK line
(``chamberlain audit acknowledge``); both stay in the chain. A line that cannot be written
raises AuditWriteError, so the turn ends as failed rather than running unaudited.

Limits, by design:
- Deleting the log, its head and the anchor together leaves a home that looks new: nothing
  outside the home remembers that there was a log.
- A head copied earlier can be put back with the log cut to the same line: the MAC proves a
  head was written here, not that it is the newest.
- A log from before heads were signed has an unsigned head and no anchor; so does one whose
  anchor was deleted and head rewritten unsigned. The writer adopts such a log and verify says
  which lines came before signing, so the adoption stays visible.
- Whoever can read the install secret (the system keyring, or ``token.key`` when there is none)
  can sign anything. The MACs stop edits by whatever cannot: a hand edit, a stray program, a
  file restored or copied from another home.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import hmac
import json
import logging
import math
import os
import re
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from enum import Enum, StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

from broker.filelock import keep_folder_owner
from broker.filelock import lock as _lock
from broker.filelock import unlock as _unlock
from core.clock import Clock, SystemClock
from memory.credentials import blank_credentials
from memory.disk import DiskProblem, diagnose_os_error, shown

log = logging.getLogger("chamberlain.broker.audit")

JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"

GENESIS = "0" * 64
REDACTED = "[redacted]"
MAX_STRING = 2_000
MAX_ITEMS = 100
MAX_DEPTH = 8
MAX_KEY = 200
# One event's data, serialised, may not exceed this; beyond it the data is replaced by a digest.
MAX_DATA_CHARS = 64 * 1024
# Strings longer than this are cut before the secret patterns run, so a megabyte passed by
# mistake costs no more than this to scan. See _redact_string for why the cut is safe.
_SCAN_LIMIT = 64 * 1024
_TAIL_CHUNK = 8 * 1024
# How far back the writer looks for the last intact line when the end of the log is damaged.
_MAX_TAIL_SCAN = 4 * 1024 * 1024
_RECORD_KEYS = frozenset({"seq", "ts", "event", "turn", "data", "prev", "hash"})
_HEX64 = re.compile(r"[0-9a-f]{64}")


class AuditEvent(StrEnum):
    """What happened. One event per pipeline stage; the names are part of the log format."""

    ROUTER_OUTPUT = "ROUTER_OUTPUT"
    POLICY_DECISION = "POLICY_DECISION"
    PERMISSION_CHECK = "PERMISSION_CHECK"
    PERMISSION_GRANTED = "PERMISSION_GRANTED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    # A prompt nobody answered is not a user's denial (architecture invariant 2).
    PERMISSION_TIMEOUT = "PERMISSION_TIMEOUT"
    # An answer that came after its prompt had timed out: recorded, never used.
    PERMISSION_LATE_ANSWER = "PERMISSION_LATE_ANSWER"
    PERMISSION_REVOKED = "PERMISSION_REVOKED"
    PERMISSION_EXPIRED = "PERMISSION_EXPIRED"
    TOKEN_REFUSED = "TOKEN_REFUSED"
    TOOL_CALL_START = "TOOL_CALL_START"
    TOOL_CALL_END = "TOOL_CALL_END"
    EXECUTOR_RESPONSE = "EXECUTOR_RESPONSE"
    # The tool loop ended without a final answer: stall, budget or repeated errors.
    EXECUTOR_STOPPED = "EXECUTOR_STOPPED"
    MEMORY_RECALL = "MEMORY_RECALL"
    MEMORY_WRITE = "MEMORY_WRITE"
    POSTHOOK_MEMORY = "POSTHOOK_MEMORY"
    POSTHOOK_SUMMARY = "POSTHOOK_SUMMARY"
    # Written by the audit log itself: an append that was cut short (a crash or a full disk),
    # found and described by the next writer; and the user's signed acknowledgement of one.
    AUDIT_FAULT = "AUDIT_FAULT"
    AUDIT_ACK = "AUDIT_ACK"


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


@dataclasses.dataclass(frozen=True)
class AuditFault:
    """An append that was cut short, as the next writer recorded it.

    ``line`` is the first line of the torn bytes, ``recorded_at`` the AUDIT_FAULT line that
    describes them (its ``seq`` and ``hash`` are what an acknowledgement names), and
    ``acknowledged_at`` the AUDIT_ACK line that accepted it, if any.
    """

    line: int
    recorded_at: int
    seq: int
    hash: str
    acknowledged_at: int | None = None


class AuditWriteError(OSError):
    """An event could not be written to the audit log (a full disk, a read-only home, an I/O
    error).

    Raised by ``AuditLog.append`` so that nothing runs unaudited: the session refuses every
    action of a turn whose audit cannot be written. The log is left as a torn tail at worst,
    which ``verify`` reports as an interrupted append and the next writer records as a fault
    the user can acknowledge. ``str()`` is one sentence for the person: what cannot be written,
    why, and what to do (``problem`` holds the diagnosis).
    """

    problem: DiskProblem | None = None

    def __str__(self) -> str:
        return str(self.strerror or super().__str__())


def _cannot_write(path: Path, exc: OSError) -> AuditWriteError:
    """The AuditWriteError for `exc`, met writing the audit files beside `path` (the log)."""
    if isinstance(exc, AuditWriteError):
        return exc
    problem = diagnose_os_error(path, exc)
    error = AuditWriteError(
        exc.errno,
        f"the audit log {shown(path)} cannot be written: {problem.why}; {problem.fix}",
        str(exc.filename or path),
    )
    error.problem = problem
    return error


# --- redaction ---------------------------------------------------------------------------------

# Key names, compared with case, "-", "_" and spaces removed, so "X-Api-Key", "apiKey" and
# "private_key" are all caught. Substring match: "db_password" and "auth_token" are secrets.
_SECRET_KEY_PARTS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "authorization",
    "cookie",
    "privatekey",
    "credential",
)
# "token_id" is the opaque id of a permission token, not the token: the HMAC that makes a token
# valid never reaches the audit. Only this exact spelling is allowed; "tokenId" or
# "session_token_id" are still blanked, so a caller cannot widen the hole by accident.
_ALLOWED_KEYS = frozenset({"token_id"})

# Secret values inside strings — secret formats, passwords in sentences and on command lines,
# random-looking runs — are found by the detector memory shares (memory/credentials.py), so
# what memory refuses to remember is exactly what the audit blanks. The rules for keys (above)
# and for id and digest fields (below) are the audit's own: they read structure, not text.

_TRAILING_TOKEN = re.compile(r"\S+\Z")
_SECRET_KEY = re.compile("|".join(_SECRET_KEY_PARTS))
# Short lowercase words (status names, most keys) hold no credential: every rule of the shared
# detector needs an upper-case letter, a separator (whitespace, "-", ".", "=", ":", "/") or at
# least 20 characters.
_PLAIN = re.compile(r"[a-z0-9_]{0,19}")


@functools.lru_cache(maxsize=1024)
def _is_secret_key(key: str) -> bool:
    if key in _ALLOWED_KEYS:
        return False
    compact = key.lower().replace("-", "").replace("_", "").replace(" ", "")
    return _SECRET_KEY.search(compact) is not None


@functools.lru_cache(maxsize=1024)
def _is_identifier_key(key: str) -> bool:
    """Keys whose values are ids or digests: exempt from the generic high-entropy rule only."""
    k = key.lower()
    return k in {"id", "sha256", "digest", "hash", "token_id"} or k.endswith(
        ("_id", "_ids", "_sha256", "_digest", "_hash")
    )


def _redact_string(s: str, *, generic: bool) -> str:
    if _PLAIN.fullmatch(s):
        return s
    if len(s) > _CACHED_STRING:
        return _scan_string(s, generic=generic)
    clean = _CLEAN_GENERIC if generic else _CLEAN_EXPLICIT
    if s in clean:
        return s
    out = _scan_string(s, generic=generic)
    if out == s:
        # Only strings with nothing to redact are remembered: a secret is never kept around.
        if len(clean) >= _CLEAN_MAX:
            clean.clear()
        clean.add(s)
    return out


# Most strings in a turn's events recur every turn (tool names, intents, reasons, paths):
# scanning each once is most of what redaction costs.
_CACHED_STRING = 256
_CLEAN_MAX = 4096
_CLEAN_GENERIC: set[str] = set()
_CLEAN_EXPLICIT: set[str] = set()


def _scan_string(s: str, *, generic: bool) -> str:
    original_len = len(s)
    if original_len > _SCAN_LIMIT:
        # Drop the word the cut fell in, so no partial secret (too short for its pattern) can
        # survive and slide into the kept prefix once earlier secrets shrink to "[redacted]".
        s = _TRAILING_TOKEN.sub("", s[:_SCAN_LIMIT])
    s = blank_credentials(s, REDACTED, random_runs=generic)
    if len(s) > MAX_STRING:
        s = f"{s[:MAX_STRING]}...[truncated, {original_len} chars]"
    return s


def _redact(value: object, depth: int, generic: bool) -> JSONValue:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return _redact_string(value, generic=generic)
    if isinstance(value, Enum):
        return _redact(value.value, depth, generic)
    if isinstance(value, bytes | bytearray | memoryview):
        # Raw bytes are file or tool content far more often than anything else; str() would
        # write them out, so they become a digest instead.
        return _digest_json(bytes(value))
    if depth >= MAX_DEPTH:
        return "[too deeply nested]"
    if isinstance(value, Mapping):
        return _redact_mapping(value, depth)
    if isinstance(value, list | tuple):
        items = [_redact(v, depth + 1, generic) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"[... {len(value) - MAX_ITEMS} more items]")
        return items
    if isinstance(value, set | frozenset):
        members = sorted(value, key=repr)
        return _redact(members, depth, generic)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and not isinstance(value, type):
        return _redact(model_dump(mode="json"), depth, generic)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _redact(dataclasses.asdict(value), depth, generic)
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - any __str__ may raise; the audit must still be written
        log.warning("audit value of type %s could not be converted to text", type(value).__name__)
        text = f"<unprintable {type(value).__name__}>"
    return _redact_string(text, generic=generic)


def _redact_mapping(value: Mapping[Any, Any], depth: int) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {}
    for i, (raw_key, v) in enumerate(value.items()):
        if i == MAX_ITEMS:
            out["[truncated]"] = f"{len(value) - MAX_ITEMS} more keys"
            break
        key = raw_key if isinstance(raw_key, str) else str(raw_key)
        key = _redact_string(key[:MAX_KEY], generic=True)
        if _is_secret_key(key):
            out[key] = REDACTED
        else:
            out[key] = _redact(v, depth + 1, not _is_identifier_key(key))
    return out


def redact(value: object) -> JSONValue:
    """Return ``value`` as JSON-safe data with secrets blanked and long strings capped.

    Dict keys naming a secret (password, secret, token, api_key, authorization, cookie,
    private_key, credential and the like; case, "-" and "_" ignored) have their value replaced
    by "[redacted]", except the key ``token_id`` exactly, which holds an opaque permission-token
    id. String values are scanned by the credential detector memory shares
    (``memory.credentials``): secret formats (PEM private keys, ``Bearer ...``, ``sk-...``, AWS
    ``AKIA...``, GitHub ``ghp_...``, JWTs, URL passwords, ``password=...``), passwords and codes
    in sentences ("my password is X"), passwords on command lines (``--token X``,
    ``PGPASSWORD=X``, ``curl -u user:X``, ``mysql -pX``, ``sshpass -p X``) and long
    random-looking runs; each value found becomes "[redacted]". Values under id and digest
    keys (``*_id``, ``sha256``, ``*_digest``, ``*_hash``) skip only the random-run rule. Bytes
    become a ``digest``; other non-JSON values become ``str(value)``, then are scanned like any
    string. Strings are capped at MAX_STRING characters, containers at MAX_ITEMS entries and
    MAX_DEPTH levels.
    """
    return _redact(value, 0, True)


def _digest_json(content: str | bytes) -> dict[str, JSONValue]:
    return {k: v for k, v in digest(content).items()}


def digest(content: str | bytes) -> dict[str, str | int]:
    """What the audit records instead of content: SHA-256 (of UTF-8 for text) and length.

    ``len`` is in the input's own units: characters for text, bytes for bytes.
    """
    raw = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    return {"sha256": hashlib.sha256(raw).hexdigest(), "len": len(content)}


# --- format --------------------------------------------------------------------------------------


def _canonical(obj: object) -> str:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def _hash_record(record: Mapping[str, object]) -> str:
    body = _canonical({k: v for k, v in record.items() if k != "hash"})
    return hashlib.sha256(body.encode("ascii")).hexdigest()


def _head_path(path: Path) -> Path:
    return path.with_name(path.name + ".head")


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _anchor_path(path: Path) -> Path:
    return path.with_name(path.name + ".anchor")


# The MACs' inputs start with what they are for, so a head MAC can never pass as an anchor's.
_HEAD_MAC_CONTEXT = b"chamberlain audit head\n"
_ANCHOR_MAC_CONTEXT = b"chamberlain audit anchor\n"
_GENESIS_ID = re.compile(r"[0-9a-f]{32}")
_SIGNED_HEAD_KEYS = frozenset({"genesis", "hash", "mac", "seq"})
_OPTIONAL_HEAD_KEYS = frozenset({"broken", "unsigned_until"})


@dataclasses.dataclass(frozen=True)
class _Head:
    """The head file: the last seq and hash, and, when signed, what the MAC vouches for."""

    seq: int
    hash: str
    # None for an unsigned head (a writer with no key, or one from before heads were signed).
    genesis: str | None = None
    mac: str | None = None
    # What a signing writer found wrong with the files; carried into every later head.
    broken: str | None = None
    # Lines 1..N were written before this log's heads were signed.
    unsigned_until: int | None = None

    def fields(self) -> dict[str, object]:
        """Everything the MAC covers."""
        out: dict[str, object] = {"hash": self.hash, "seq": self.seq}
        if self.genesis is not None:
            out["genesis"] = self.genesis
            if self.broken is not None:
                out["broken"] = self.broken
            if self.unsigned_until is not None:
                out["unsigned_until"] = self.unsigned_until
        return out

    def to_bytes(self) -> bytes:
        out = self.fields()
        if self.mac is not None:
            out["mac"] = self.mac
        return (_canonical(out) + "\n").encode("ascii")

    def signed(self, key: bytes) -> _Head:
        return dataclasses.replace(self, mac=_head_mac(self, key))


def _head_mac(head: _Head, key: bytes) -> str:
    body = _HEAD_MAC_CONTEXT + _canonical(head.fields()).encode("ascii")
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def _head_mac_ok(head: _Head, key: bytes) -> bool:
    return head.mac is not None and hmac.compare_digest(_head_mac(head, key), head.mac)


def _parse_head(raw: bytes) -> _Head | None:
    """The head file's content, or None unless it is exactly what a writer writes.

    Only the form is checked here; whether a signed head's MAC is right is for the caller.
    """
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: an edit nested it absurdly deep
        return None
    if not isinstance(obj, dict):
        return None
    seq, hash_ = obj.get("seq"), obj.get("hash")
    if type(seq) is not int or not isinstance(hash_, str) or not _HEX64.fullmatch(hash_):
        return None
    keys = set(obj)
    if keys == {"seq", "hash"}:
        head = _Head(seq, hash_) if seq >= 1 else None
    elif _SIGNED_HEAD_KEYS <= keys <= _SIGNED_HEAD_KEYS | _OPTIONAL_HEAD_KEYS:
        genesis, mac = obj["genesis"], obj["mac"]
        broken, until = obj.get("broken"), obj.get("unsigned_until")
        if (
            seq < 0
            or (seq == 0 and hash_ != GENESIS)
            or not isinstance(genesis, str)
            or not _GENESIS_ID.fullmatch(genesis)
            or not isinstance(mac, str)
            or not _HEX64.fullmatch(mac)
            or ("broken" in obj and not isinstance(broken, str))
            or ("unsigned_until" in obj and (type(until) is not int or until < 0))
        ):
            return None
        head = _Head(seq, hash_, genesis, mac, broken, until)
    else:
        return None
    if head is None or head.to_bytes() != raw:
        return None
    return head


def _anchor_mac(genesis: str, key: bytes) -> str:
    return hmac.new(key, _ANCHOR_MAC_CONTEXT + genesis.encode("ascii"), hashlib.sha256).hexdigest()


def _anchor_bytes(genesis: str, key: bytes) -> bytes:
    return (_canonical({"genesis": genesis, "mac": _anchor_mac(genesis, key)}) + "\n").encode()


def _parse_anchor(raw: bytes, key: bytes | None) -> str | None:
    """The genesis id an anchor file records, or None if it is not one (or, given the key, its
    MAC does not match)."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or set(obj) != {"genesis", "mac"}:
        return None
    genesis, mac = obj["genesis"], obj["mac"]
    if not isinstance(genesis, str) or not _GENESIS_ID.fullmatch(genesis):
        return None
    if not isinstance(mac, str) or not _HEX64.fullmatch(mac):
        return None
    if _canonical(obj).encode() + b"\n" != raw:
        return None
    if key is not None and not hmac.compare_digest(_anchor_mac(genesis, key), mac):
        return None
    return genesis


def _head_problem(
    head: _Head, anchor_raw: bytes | None, key: bytes | None, size: int
) -> str | None:
    """What is wrong with a well-formed head and the anchor beside it, or None.

    Without a key the MACs cannot be checked; everything else is.
    """
    if anchor_raw is not None and _parse_anchor(anchor_raw, key) is None:
        return "the anchor file was edited, or signed with another install secret"
    if head.genesis is None:
        if anchor_raw is not None:
            return "the head file is not signed, but this log's heads are: it was replaced"
        if key is not None:
            return (
                "the head file is not signed: it was written by a Chamberlain from before "
                "signed heads (the next turn signs it) or by hand"
            )
        return None
    if key is not None and not _head_mac_ok(head, key):
        return (
            "the head file's MAC does not match: it was edited, or signed with another "
            "install secret"
        )
    if anchor_raw is None:
        if head.seq == 0 and not size:
            return None  # a writer stopped between the first head and the anchor
        return "the anchor file is missing: it was deleted"
    if head.genesis != _parse_anchor(anchor_raw, None):
        return "the head file belongs to another audit log (its genesis is not the anchor's)"
    if head.broken is not None:
        return f"the audit files were tampered with: {head.broken}"
    return None


def _parse_record(raw: bytes) -> dict[str, Any] | None:
    """A log line (without its newline) as a record, or None if it does not even parse."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: an edit nested it absurdly deep
        return None
    if not isinstance(obj, dict) or type(obj.get("seq")) is not int:
        return None
    if not isinstance(obj.get("hash"), str):
        return None
    return obj


_INTERRUPTED = "an append was interrupted (a crash or a full disk)"
_ACK_MAC_CONTEXT = b"chamberlain audit acknowledgement\n"
# Every record line starts so: the canonical form sorts the keys, and "data" comes first.
_RECORD_START = b'{"data":'
_PRINTABLE = re.compile(rb"[\x20-\x7e]+")


def _looks_torn(raw: bytes) -> bool:
    """Whether ``raw`` (a line without its newline) can be what a cut append leaves behind: the
    start of a record line as the writer writes it (printable ASCII beginning ``{"data":``)
    that is not yet a whole JSON value. A line edited by hand rarely is, and stays a failure."""
    if not raw or not _PRINTABLE.fullmatch(raw):
        return False
    if not (raw.startswith(_RECORD_START) or _RECORD_START.startswith(raw)):
        return False
    try:
        json.JSONDecoder().raw_decode(raw.decode("ascii"))
    except (ValueError, RecursionError):
        return True
    return False


def _ack_mac(faults: JSONValue, key: bytes) -> str:
    body = _ACK_MAC_CONTEXT + _canonical(faults).encode("ascii")
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def _lines_backward(read_at: Callable[[int, int], bytes], size: int) -> Iterator[bytes]:
    """Lines of a file from the last to the first, without newlines, reading from the end.

    A final line without its newline is yielded like any other.
    """
    pos = size
    buf = b""
    first = True
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        pos -= step
        buf = read_at(pos, step) + buf
        parts = buf.split(b"\n")
        buf = parts[0]
        for line in reversed(parts[1:]):
            if first and line == b"":
                first = False  # the file ends with a newline: nothing after it
                continue
            first = False
            yield line
    if size > 0 and (buf or not first):
        yield buf


_O_BINARY: int = getattr(os, "O_BINARY", 0)


# --- writer -------------------------------------------------------------------------------------


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
        # With a key the head is signed and the log anchored (see the module docstring).
        self._key = key
        self._genesis: str | None = None
        self._broken: str | None = None
        self._unsigned_until: int | None = None
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._head_fd: int | None = None
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
        for fd in (self._fd, self._lock_fd, self._head_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._lock_fd = self._head_fd = None
        self._size = -1

    def _open(self) -> int:
        """Open the files: on first use, or in a forked child, which shares the parent's open
        files (and therefore its flock) and needs its own. Returns the lock's descriptor."""
        self._close_fds()
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock_fd = os.open(_lock_path(self.path), os.O_RDWR | os.O_CREAT | _O_BINARY, 0o600)
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
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _O_BINARY, 0o600)
        self._size = -1
        keep_folder_owner(self._fd, self.path.parent)

    def append(
        self, event: AuditEvent | str, /, turn_id: str | None = None, **data: object
    ) -> dict[str, Any]:
        """Write one event and return the record as written (including its hash).

        ``event`` is positional-only so that data may carry a field named "event".

        ``data`` goes through ``redact`` first. Raises ValueError for an event name not in
        AuditEvent (or one only the log itself writes), and AuditWriteError (an OSError) when
        the line cannot be written, a full disk say: an audit that silently stops is worse than
        a failed turn, so the session ends the turn as failed. A line cut short that way is
        recorded as an AUDIT_FAULT by the next append (see ``_sync_state``). A line that was
        written but whose head update failed is not an error: the event is in the log, verify
        notes the head one line behind, and the next append brings the head up to date.
        """
        try:
            name = AuditEvent(event)
        except ValueError:
            raise ValueError(f"unknown audit event {event!r}; add it to AuditEvent") from None
        if name in (AuditEvent.AUDIT_FAULT, AuditEvent.AUDIT_ACK):
            raise ValueError(f"{name} is written by the audit log itself")
        clean = _redact_mapping(data, 0)
        data_json = _canonical(clean)
        if len(data_json) > MAX_DATA_CHARS:
            clean = {"oversize": True, "digest": _digest_json(data_json)}
            data_json = _canonical(clean)
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
                raise _cannot_write(self.path, exc) from exc
            try:
                lead = self._sync_state()
                return self._write_record(name, turn, clean, lead, data_json)
            except OSError as exc:
                raise _cannot_write(self.path, exc) from exc
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
            data["mac"] = _ack_mac(named, self._key)
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
                raise _cannot_write(self.path, exc) from exc
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
            data_json = _canonical(clean)
        ts = datetime.fromtimestamp(self.clock.now(), UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        # The canonical form is sorted keys, so the line can be assembled around the data's
        # JSON instead of serialising the record twice. verify checks the result byte for byte.
        before_hash = f'{{"data":{data_json},"event":{_canonical(str(name))},'
        after_hash = f',"ts":{_canonical(ts)},"turn":{_canonical(turn)}}}'
        seq, prev = self._seq + 1, self._prev
        links = f'"prev":"{prev}","seq":{seq}'
        hash_ = hashlib.sha256(f"{before_hash}{links}{after_hash}".encode("ascii")).hexdigest()
        line = f'{before_hash}"hash":"{hash_}",{links}{after_hash}\n'.encode("ascii")
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
            raise _cannot_write(self.path, exc) from exc

    def _write_head(self) -> None:
        """Overwrite the head file in place; AuditWriteError if it cannot be written.

        Not write-to-temp-and-rename: that costs a couple of hundred microseconds per append
        on ext4. The head is a few hundred bytes, written at offset 0 in one write of less than
        a page over blocks it already has, so a full disk fails it whole rather than tearing it
        (the old head stays, one line behind, which the next append repairs). If it ever did
        tear, verify reports the head as unreadable and the next append rewrites it (a signing
        writer also marks the log as tampered with: it cannot tell a torn head from an edited
        one). A head file this writer has just created and could not fill is removed, since an
        empty head would read as an edited one.
        """
        head = _head_path(self.path)
        try:
            try:
                on_disk = os.stat(head)
            except FileNotFoundError:
                on_disk = None
            if self._head_fd is not None:
                st = os.fstat(self._head_fd)
                if on_disk is None or (on_disk.st_dev, on_disk.st_ino) != (st.st_dev, st.st_ino):
                    os.close(self._head_fd)  # deleted or replaced behind our back
                    self._head_fd = None
            if self._head_fd is None:
                self._head_fd = os.open(head, os.O_RDWR | os.O_CREAT | _O_BINARY, 0o600)
                keep_folder_owner(self._head_fd, self.path.parent)
        except OSError as exc:
            raise _cannot_write(self.path, exc) from exc
        content = _Head(self._seq, self._prev)
        if self._key is not None:
            assert self._genesis is not None
            content = _Head(
                self._seq,
                self._prev,
                self._genesis,
                broken=self._broken,
                unsigned_until=self._unsigned_until,
            ).signed(self._key)
        data = content.to_bytes()
        try:
            os.lseek(self._head_fd, 0, os.SEEK_SET)
            written = os.write(self._head_fd, data)
            while written < len(data):
                written += os.write(self._head_fd, data[written:])
            os.ftruncate(self._head_fd, len(data))
            if self.durable:
                os.fsync(self._head_fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                if os.fstat(self._head_fd).st_size == 0:
                    os.close(self._head_fd)
                    self._head_fd = None
                    os.unlink(head)
            raise _cannot_write(self.path, exc) from exc

    def _sync_state(self) -> bytes:
        """Make the in-memory seq/hash match the file; return bytes to write before the line.

        Called with the lock held. Cheap when we were the last writer: one fstat and one stat.

        When the log ends in an append that was cut short (a crash or a full disk left part of
        a line, see ``_looks_torn``) and the head does not vouch for anything past the last
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
            fault: dict[str, JSONValue] = {
                "what": _INTERRUPTED,
                "offset": torn_from,
                "after_seq": self._seq,
                "bytes": {"sha256": hashlib.sha256(torn).hexdigest(), "len": len(torn)},
            }
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
        """Find where the chain continues, from the end of the log and from the head file.

        Returns the offset where the bytes of an append that was cut short begin, when the log
        ends in some (one or more pieces that each look like the start of a record line) right
        after the line the chain continues from; otherwise None.
        """
        tail: tuple[int, str] | None = None
        scanned = 0
        ends_in_newline = size == 0 or self._read_at(size - 1, 1) == b"\n"
        # Where the bytes after the last intact record begin, and whether they all look torn.
        torn_from: int | None = None
        all_torn = True
        cursor, first = size, True
        for raw in _lines_backward(self._read_at, size):
            end = cursor if first and not ends_in_newline else cursor - 1
            cursor = end - len(raw)
            scanned += len(raw) + 1
            record = _parse_record(raw)
            if record is not None:
                tail = record["seq"], record["hash"]
                torn_from = min(end + 1, size)
                break
            first = False
            all_torn = all_torn and _looks_torn(raw)
            if scanned > _MAX_TAIL_SCAN:
                break
        else:
            torn_from = 0  # no intact record at all: every byte is after "the start"
        try:
            head_raw: bytes | None = _head_path(self.path).read_bytes()
        except FileNotFoundError:
            head_raw = None
        parsed = _parse_head(head_raw) if head_raw is not None else None
        if head_raw is not None and parsed is None:
            log.error("audit head file %s is unreadable or edited", _head_path(self.path))
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
                self.path,
                tail[0],
                head[0],
            )
            chosen = head
        self._seq, self._prev = chosen if chosen is not None else (0, GENESIS)
        if self._key is not None:
            self._load_signing_state(size, head_raw, parsed, self._key)
        # Only a cut append the head does not vouch past: a head ahead of the last intact line
        # means lines were cut off, and that stays a failure.
        continues_from_tail = (self._seq, self._prev) == (tail or (0, GENESIS))
        if torn_from is None or torn_from >= size or not all_torn or not continues_from_tail:
            return None
        return torn_from

    def _load_signing_state(
        self, size: int, head_raw: bytes | None, head: _Head | None, key: bytes
    ) -> None:
        """Take the genesis id and flags over from the files, or find out they were tampered with.

        A signing writer never signs over evidence: when the head or the anchor is missing,
        unsigned, edited or from another log, the problem goes into the head's ``broken`` field,
        which every later head carries, so verify keeps failing however many turns follow.
        """
        anchor = _anchor_path(self.path)
        try:
            anchor_raw: bytes | None = anchor.read_bytes()
        except FileNotFoundError:
            anchor_raw = None
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
            problem = _head_problem(head, anchor_raw, key, size)
        trusted = head if head is not None and head.genesis and _head_mac_ok(head, key) else None
        recorded = _parse_anchor(anchor_raw, key) if anchor_raw is not None else None
        if recorded is not None:
            self._genesis = recorded
        elif trusted is not None:
            self._genesis = trusted.genesis
        else:
            self._genesis = secrets.token_hex(16)
        if problem is not None:
            if trusted is not None and trusted.broken is not None:
                self._broken = trusted.broken  # the first finding stays
            else:
                self._broken = f"before line {self._seq + 1} was written, {problem}"
                log.error("audit log %s was tampered with: %s", self.path, problem)
        else:
            self._broken = trusted.broken if trusted is not None else None
        if adopted:
            self._unsigned_until = self._seq
            log.warning("signing the head of %s, written before heads were signed", self.path)
        else:
            self._unsigned_until = trusted.unsigned_until if trusted is not None else None
        if anchor_raw is None:
            # The head first, then the anchor: a crash between them leaves a signed empty head
            # and no anchor, which the next writer completes (see _head_problem).
            if head_raw is None and size == 0:
                self._write_head()
            self._write_anchor(anchor)

    def _write_anchor(self, anchor: Path) -> None:
        assert self._key is not None
        assert self._genesis is not None
        try:
            fd = os.open(anchor, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o600)
        except FileExistsError:
            return  # only under our lock, so only a file put there by hand: verify judges it
        try:
            try:
                keep_folder_owner(fd, self.path.parent)
                os.write(fd, _anchor_bytes(self._genesis, self._key))
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            # An empty or partial anchor would read as an edited one; no anchor yet is what a
            # writer that stopped between the first head and the anchor leaves (see
            # _head_problem), and the next writer completes it.
            with contextlib.suppress(OSError):
                os.unlink(anchor)
            raise _cannot_write(self.path, exc) from exc


# --- readers -------------------------------------------------------------------------------------


def _snapshot(path: Path) -> tuple[int | None, bytes | None, bytes | None]:
    """The log's size and the head and anchor files' bytes, read together under the lock."""
    lock_fd: int | None = None
    with contextlib.suppress(FileNotFoundError):  # no writer has ever opened this log
        lock_fd = os.open(_lock_path(path), os.O_RDONLY | _O_BINARY)
    try:
        if lock_fd is not None:
            _lock(lock_fd, shared=True)
        try:
            size: int | None = path.stat().st_size
        except FileNotFoundError:
            size = None
        try:
            head: bytes | None = _head_path(path).read_bytes()
        except FileNotFoundError:
            head = None
        try:
            anchor: bytes | None = _anchor_path(path).read_bytes()
        except FileNotFoundError:
            anchor = None
    finally:
        if lock_fd is not None:
            _unlock(lock_fd)
            os.close(lock_fd)
    return size, head, anchor


def _check_line(raw: bytes, lineno: int, seq: int, prev: str) -> tuple[str | None, dict[str, Any]]:
    """(reason it is bad or None, the record) for line ``lineno`` expected to carry ``seq``."""
    if raw == b"":
        return f"line {lineno}: empty line", {}
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: an edit nested it absurdly deep
        return f"line {lineno}: not valid JSON (the line was edited)", {}
    if not isinstance(obj, dict) or set(obj) != _RECORD_KEYS:
        return f"line {lineno}: not an audit record (wrong fields)", {}
    try:
        canonical = _canonical(obj).encode("ascii")
    except ValueError:
        return f"line {lineno}: not in canonical form (the line was edited)", {}
    if canonical != raw:
        return f"line {lineno}: not in canonical form (the line was edited)", {}
    hash_ = obj["hash"]
    if not isinstance(hash_, str) or hash_ != _hash_record(obj):
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
        return bool(record["event"] == AuditEvent.AUDIT_FAULT) and record["data"] == {
            "what": _INTERRUPTED,
            "offset": self.offset,
            "after_seq": record["seq"] - 1,
            "bytes": {"sha256": hashlib.sha256(torn).hexdigest(), "len": len(torn)},
        }


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
        and _HEX64.fullmatch(mac)
        and hmac.compare_digest(mac, _ack_mac(named, key))
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
    - a last line cut mid-write (no newline, the start of a record; see ``_looks_torn``) that
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
    size, head_raw, anchor_raw = _snapshot(path)
    head = _parse_head(head_raw) if head_raw is not None else None
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
        problem = _head_problem(head, anchor_raw, key, 0)
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
                if reason is None or _looks_torn(body):
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
                if not _looks_torn(body) or gap.size > _MAX_TAIL_SCAN:
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
        why = f"line {gap.line} is incomplete: {_INTERRUPTED}; no line was written before it"
        return VerifyResult(False, 0, gap.line, why, torn_tail=True, interrupted=True)
    if head_raw is None:
        return VerifyResult(False, good, None, "head file missing")
    if head is None:
        return VerifyResult(False, good, None, "head file unreadable or edited")
    problem = _head_problem(head, anchor_raw, key, size)
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
            f"{len(acknowledged)} acknowledged fault(s): "
            + "; ".join(
                f"line {f.line}: {_INTERRUPTED}, acknowledged at line {f.acknowledged_at}"
                for f in acknowledged
            )
        )
    pending = [f for f in faults if f.acknowledged_at is None]
    if pending or torn_tail:
        found = [
            f"line {f.line}: {_INTERRUPTED}; recorded at line {f.recorded_at}, not yet acknowledged"
            for f in pending
        ]
        if gap is not None:
            found.append(
                f"line {gap.line} is incomplete: {_INTERRUPTED}; the lines before it are intact"
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


def tail(path: Path, n: int) -> list[dict[str, Any]]:
    """The last ``n`` records, oldest first, reading only the end of the file.

    A line that does not parse is returned as an UNREADABLE_LINE record carrying its digest,
    so a damaged log shows as damaged; run ``verify`` to learn more.
    """
    if n <= 0:
        return []
    path = Path(path)
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below; read_at needs the open file
    except FileNotFoundError:
        return []
    with f:
        size = os.fstat(f.fileno()).st_size

        def read_at(offset: int, length: int) -> bytes:
            f.seek(offset)
            return f.read(length)

        out: list[dict[str, Any]] = []
        for raw in _lines_backward(read_at, size):
            record = _parse_record(raw)
            if record is None:
                record = {
                    "seq": None,
                    "ts": None,
                    "event": "UNREADABLE_LINE",
                    "turn": None,
                    "data": {"line": _digest_json(raw)},
                    "prev": None,
                    "hash": None,
                }
            out.append(record)
            if len(out) == n:
                break
    out.reverse()
    return out
