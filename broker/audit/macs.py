"""What the install's audit key signs: the head file, the anchor file and an acknowledgement.

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

It must never accept a head or an anchor that is not byte for byte what a writer writes, never
compare a MAC other than in constant time, and never read or write a file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import re

from broker.audit.events import JSONValue
from broker.audit.format import GENESIS, HEX64, canonical

# The MACs' inputs start with what they are for, so a head MAC can never pass as an anchor's.
_HEAD_MAC_CONTEXT = b"chamberlain audit head\n"
_ANCHOR_MAC_CONTEXT = b"chamberlain audit anchor\n"
_GENESIS_ID = re.compile(r"[0-9a-f]{32}")
_SIGNED_HEAD_KEYS = frozenset({"genesis", "hash", "mac", "seq"})
_OPTIONAL_HEAD_KEYS = frozenset({"broken", "unsigned_until"})
_ACK_MAC_CONTEXT = b"chamberlain audit acknowledgement\n"


@dataclasses.dataclass(frozen=True)
class Head:
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
        return (canonical(out) + "\n").encode("ascii")

    def signed(self, key: bytes) -> Head:
        return dataclasses.replace(self, mac=_head_mac(self, key))


def _head_mac(head: Head, key: bytes) -> str:
    body = _HEAD_MAC_CONTEXT + canonical(head.fields()).encode("ascii")
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def head_mac_ok(head: Head, key: bytes) -> bool:
    return head.mac is not None and hmac.compare_digest(_head_mac(head, key), head.mac)


def parse_head(raw: bytes) -> Head | None:
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
    if type(seq) is not int or not isinstance(hash_, str) or not HEX64.fullmatch(hash_):
        return None
    keys = set(obj)
    if keys == {"seq", "hash"}:
        head = Head(seq, hash_) if seq >= 1 else None
    elif _SIGNED_HEAD_KEYS <= keys <= _SIGNED_HEAD_KEYS | _OPTIONAL_HEAD_KEYS:
        genesis, mac = obj["genesis"], obj["mac"]
        broken, until = obj.get("broken"), obj.get("unsigned_until")
        if (
            seq < 0
            or (seq == 0 and hash_ != GENESIS)
            or not isinstance(genesis, str)
            or not _GENESIS_ID.fullmatch(genesis)
            or not isinstance(mac, str)
            or not HEX64.fullmatch(mac)
            or ("broken" in obj and not isinstance(broken, str))
            or ("unsigned_until" in obj and (type(until) is not int or until < 0))
        ):
            return None
        head = Head(seq, hash_, genesis, mac, broken, until)
    else:
        return None
    if head is None or head.to_bytes() != raw:
        return None
    return head


def _anchor_mac(genesis: str, key: bytes) -> str:
    return hmac.new(key, _ANCHOR_MAC_CONTEXT + genesis.encode("ascii"), hashlib.sha256).hexdigest()


def anchor_bytes(genesis: str, key: bytes) -> bytes:
    return (canonical({"genesis": genesis, "mac": _anchor_mac(genesis, key)}) + "\n").encode()


def parse_anchor(raw: bytes, key: bytes | None) -> str | None:
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
    if not isinstance(mac, str) or not HEX64.fullmatch(mac):
        return None
    if canonical(obj).encode() + b"\n" != raw:
        return None
    if key is not None and not hmac.compare_digest(_anchor_mac(genesis, key), mac):
        return None
    return genesis


def head_problem(head: Head, anchor_raw: bytes | None, key: bytes | None, size: int) -> str | None:
    """What is wrong with a well-formed head and the anchor beside it, or None.

    Without a key the MACs cannot be checked; everything else is.
    """
    if anchor_raw is not None and parse_anchor(anchor_raw, key) is None:
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
    if key is not None and not head_mac_ok(head, key):
        return (
            "the head file's MAC does not match: it was edited, or signed with another "
            "install secret"
        )
    if anchor_raw is None:
        if head.seq == 0 and not size:
            return None  # a writer stopped between the first head and the anchor
        return "the anchor file is missing: it was deleted"
    if head.genesis != parse_anchor(anchor_raw, None):
        return "the head file belongs to another audit log (its genesis is not the anchor's)"
    if head.broken is not None:
        return f"the audit files were tampered with: {head.broken}"
    return None


def ack_mac(faults: JSONValue, key: bytes) -> str:
    body = _ACK_MAC_CONTEXT + canonical(faults).encode("ascii")
    return hmac.new(key, body, hashlib.sha256).hexdigest()
