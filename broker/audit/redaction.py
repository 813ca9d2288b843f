"""What an event's data becomes before it is written: secrets blanked, content digested, caps.

The audit log must never hold secrets, file contents, tool outputs or OCR text. Callers pass
``digest(content)`` (a SHA-256 and a length) for anything read from disk, the screen or a tool;
every value goes through ``redact`` before it is written, which blanks secret-looking keys and
values (passwords typed into command lines included), caps long strings and turns anything that
is not JSON into a string. Redaction is a safety net, not a licence to pass raw content.

It must never keep or log a value that may hold a secret: only strings with nothing to redact
are remembered (to scan each once), and an unprintable value is logged by its type alone.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import math
import re
from collections.abc import Mapping
from enum import Enum
from typing import Any

from broker.audit.events import JSONValue
from memory.credentials import blank_credentials

log = logging.getLogger("chamberlain.broker.audit")

REDACTED = "[redacted]"
MAX_STRING = 2_000
MAX_ITEMS = 100
MAX_DEPTH = 8
MAX_KEY = 200
# Strings longer than this are cut before the secret patterns run, so a megabyte passed by
# mistake costs no more than this to scan. See _scan_string for why the cut is safe.
_SCAN_LIMIT = 64 * 1024


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
        return digest_json(bytes(value))
    if depth >= MAX_DEPTH:
        return "[too deeply nested]"
    if isinstance(value, Mapping):
        return redact_mapping(value, depth)
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


def redact_mapping(value: Mapping[Any, Any], depth: int) -> dict[str, JSONValue]:
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


def digest_json(content: str | bytes) -> dict[str, JSONValue]:
    return {k: v for k, v in digest(content).items()}


def digest(content: str | bytes) -> dict[str, str | int]:
    """What the audit records instead of content: SHA-256 (of UTF-8 for text) and length.

    ``len`` is in the input's own units: characters for text, bytes for bytes.
    """
    raw = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    return {"sha256": hashlib.sha256(raw).hexdigest(), "len": len(content)}
