"""A record line's bytes: its canonical JSON, its hash, the chain start, what a cut append leaves.

Every line of the log is one record in canonical form (sorted keys, no spaces, ASCII only) that
carries the SHA-256 of the record before it (``prev``; ``GENESIS`` for the first) and its own
(``hash``). verify compares every line byte for byte with this form, so a change here is a change
of the file format: every log already written would stop verifying.

It must never read or write a file, and never use a key: the chain itself is not keyed (the
head is, see ``broker.audit.macs``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from broker.audit.events import JSONValue

GENESIS = "0" * 64
# How far back the writer looks for the last intact line when the end of the log is damaged,
# and how many torn bytes verify accepts as one cut append.
MAX_TAIL_SCAN = 4 * 1024 * 1024
RECORD_KEYS = frozenset({"seq", "ts", "event", "turn", "data", "prev", "hash"})
HEX64 = re.compile(r"[0-9a-f]{64}")


def canonical(obj: object) -> str:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def hash_record(record: Mapping[str, object]) -> str:
    body = canonical({k: v for k, v in record.items() if k != "hash"})
    return hashlib.sha256(body.encode("ascii")).hexdigest()


def parse_record(raw: bytes) -> dict[str, Any] | None:
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


INTERRUPTED = "an append was interrupted (a crash or a full disk)"
# Every record line starts so: the canonical form sorts the keys, and "data" comes first.
_RECORD_START = b'{"data":'
_PRINTABLE = re.compile(rb"[\x20-\x7e]+")


def looks_torn(raw: bytes) -> bool:
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


def record_line(
    data_json: str, event: str, ts: str, turn: str | None, seq: int, prev: str
) -> tuple[str, bytes]:
    """A record's hash and its line, newline included; ``data_json`` is its data, canonical.

    The canonical form is sorted keys, so the line can be assembled around the data's JSON
    instead of serialising the record twice. verify checks the result byte for byte.
    """
    before_hash = f'{{"data":{data_json},"event":{canonical(event)},'
    after_hash = f',"ts":{canonical(ts)},"turn":{canonical(turn)}}}'
    links = f'"prev":"{prev}","seq":{seq}'
    hash_ = hashlib.sha256(f"{before_hash}{links}{after_hash}".encode("ascii")).hexdigest()
    return hash_, f'{before_hash}"hash":"{hash_}",{links}{after_hash}\n'.encode("ascii")


def interrupted_append(offset: int, after_seq: int, torn: bytes) -> dict[str, JSONValue]:
    """The data of the AUDIT_FAULT record describing ``torn``, the bytes a cut append left at
    ``offset`` after the record numbered ``after_seq``."""
    return {
        "what": INTERRUPTED,
        "offset": offset,
        "after_seq": after_seq,
        "bytes": {"sha256": hashlib.sha256(torn).hexdigest(), "len": len(torn)},
    }
