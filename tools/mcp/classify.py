"""How an MCP server's tool becomes one of ours: its name, its class, its schema. Pure functions.

Everything a server says is untrusted: its tool names, descriptions, schemas and annotations.

- Names are namespaced `server__tool`, lower-case, and fit the builtin pattern; a builtin tool's
  name has no "__", so an MCP tool can never take one.
- The class (read / write / execute) comes from (1) the user's mapping for that tool, (2) the
  server's default category in settings, (3) the words of the tool's name (the most restrictive
  class any word names wins), (4) else execute, the most restrictive. Annotations
  (`readOnlyHint`, `destructiveHint`, `openWorldHint`) may then only make it stricter: a higher
  risk, and — unless the user mapped the tool — a stricter class. They never loosen anything.
- A schema is checked and bounded before anything validates arguments against it: no remote
  references, no regular expressions of the server's (a hostile pattern could hang the check;
  the server validates its own input anyway), size and depth capped.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import jsonschema

from tools.manual import Capability, Reversibility, Risk
from tools.mcp.config import CATEGORY_ORDER, McpCategory, McpServerConfig

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
SEPARATOR = "__"

CAPABILITY_OF: dict[str, Capability] = {
    "read": Capability.MCP_READ,
    "write": Capability.MCP_WRITE,
    "execute": Capability.MCP_EXECUTE,
}
_RISK_OF: dict[str, Risk] = {"read": "safe", "write": "moderate", "execute": "dangerous"}
_RISK_ORDER: dict[str, int] = {"safe": 0, "moderate": 1, "dangerous": 2}
_UNDO_OF: dict[str, Reversibility] = {"read": "easy", "write": "effort", "execute": "irreversible"}
_UNDO_ORDER: dict[str, int] = {"easy": 0, "effort": 1, "irreversible": 2}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words in a tool's name and the class each suggests.
_WORDS: dict[McpCategory, frozenset[str]] = {
    "read": _words(
        "search find list query get read fetch show view describe stat info lookup tree count "
        "inspect head tail browse check status ls cat peek preview glob grep"
    ),
    "write": _words(
        "create write update delete move edit rename remove put set add insert upload patch "
        "append mkdir copy send post save replace modify drop clear reset archive publish "
        "commit push merge rm mv cp touch"
    ),
    "execute": _words(
        "run execute invoke exec eval call shell command spawn start launch script terminal process"
    ),
}

MAX_DESCRIPTION = 1024
MAX_SCHEMA_BYTES = 32 * 1024
MAX_SCHEMA_DEPTH = 24
# Keywords that would run the server's regular expressions on the model's arguments.
_REGEX_KEYWORDS = ("pattern", "patternProperties")


class SchemaRejected(ValueError):
    """A tool's input schema that is not used: the tool is not offered, and this says why."""


def name_words(remote: str) -> list[str]:
    """The words of a tool name: `readFile`, `read-file`, `read_file` → ["read", "file"]."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", remote)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def local_name(server: str, remote: str) -> str | None:
    """`server__tool` as the model sees it, or None when the server's name for it cannot make
    one (nothing usable in it, or too long)."""
    words = name_words(unicodedata.normalize("NFKC", remote))
    tool = "_".join(words)
    if not tool or not tool[0].isalpha():
        tool = "t_" + tool if tool else ""
    name = f"{server}{SEPARATOR}{tool}"
    if not tool or not NAME_PATTERN.fullmatch(name) or len(name) > 64:
        return None
    return name


@dataclass(frozen=True)
class Classification:
    category: McpCategory
    capability: Capability
    risk: Risk
    reversibility: Reversibility
    # How the class was arrived at, in words: shown by `chamberlain mcp tools` and Settings.
    why: str

    @property
    def mutating(self) -> bool:
        return self.category != "read"


def _stricter(a: McpCategory, b: McpCategory) -> McpCategory:
    return a if CATEGORY_ORDER[a] >= CATEGORY_ORDER[b] else b


def category_from_words(remote: str) -> McpCategory | None:
    """The most restrictive class any word of the name names, or None when none does."""
    found: McpCategory | None = None
    for word in name_words(remote):
        for category, words in _WORDS.items():
            if word in words:
                found = category if found is None else _stricter(found, category)
    return found


def classify(remote: str, annotations: Any, config: McpServerConfig) -> Classification:
    """The class of the tool `remote` of a server configured as `config`, with its annotations
    (an object with `read_only_hint`, `destructive_hint`, `open_world_hint`, or None)."""
    mapped = config.tools.get(remote)
    category: McpCategory
    if mapped is not None:
        category, why = mapped.category, "set in your settings for this tool"
    elif config.default_category is not None:
        category, why = config.default_category, "this server's default category in settings"
    else:
        from_words = category_from_words(remote)
        if from_words is not None:
            category, why = from_words, "taken from the words of the tool's name"
        else:
            category, why = "execute", "its name says nothing, so the strictest class"
    risk: Risk = _RISK_OF[category]
    undo: Reversibility = _UNDO_OF[category]
    raised: list[str] = []

    def hint(name: str) -> bool | None:
        value = getattr(annotations, name, None) if annotations is not None else None
        return value if isinstance(value, bool) else None

    if hint("read_only_hint") is False and category == "read":
        if mapped is None:
            category = "write"
        risk = max(risk, "moderate", key=_RISK_ORDER.__getitem__)
        undo = max(undo, "effort", key=_UNDO_ORDER.__getitem__)
        raised.append("the server says it changes things")
    if hint("destructive_hint") is True and hint("read_only_hint") is not True:
        if mapped is None:
            category = _stricter(category, "write")
        risk, undo = "dangerous", "irreversible"
        raised.append("the server says it may destroy data")
    if hint("open_world_hint") is True:
        risk = max(risk, "moderate", key=_RISK_ORDER.__getitem__)
        raised.append("the server says it reaches outside this computer")
    if raised:
        why += "; stricter because " + " and ".join(raised)
    return Classification(category, CAPABILITY_OF[category], risk, undo, why)


def clean_text(text: str | None, limit: int = MAX_DESCRIPTION) -> str:
    """A server's description for the model and the person: printable, one paragraph, capped."""
    if not text:
        return ""
    kept = "".join(
        ch if ch in "\n\t" or unicodedata.category(ch)[0] not in "C" else " " for ch in text
    )
    kept = re.sub(r"[ \t]+", " ", kept).strip()
    return kept if len(kept) <= limit else kept[: limit - 1] + "…"


def checked_schema(schema: object) -> dict[str, Any]:
    """The schema the runner validates the model's arguments with: the server's, bounded.

    Raises SchemaRejected for one that is not a JSON object schema, is too large or deep, or
    refers outside itself."""
    if not isinstance(schema, dict):
        raise SchemaRejected("its input schema is not a JSON object")
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError, RecursionError):
        raise SchemaRejected("its input schema is not plain JSON") from None
    if size > MAX_SCHEMA_BYTES:
        raise SchemaRejected(f"its input schema is {size} bytes, over {MAX_SCHEMA_BYTES}")
    cleaned: dict[str, Any] = _without_regexes(schema, 0)
    if cleaned.get("type", "object") != "object":
        raise SchemaRejected("its input schema does not describe an object")
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    try:
        jsonschema.Draft202012Validator.check_schema(cleaned)
    except jsonschema.SchemaError as exc:
        raise SchemaRejected(f"its input schema is invalid: {exc.message[:200]}") from None
    return cleaned


def _without_regexes(node: Any, depth: int) -> Any:
    if depth > MAX_SCHEMA_DEPTH:
        raise SchemaRejected(f"its input schema is nested deeper than {MAX_SCHEMA_DEPTH} levels")
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _REGEX_KEYWORDS:
                continue
            if key in ("$ref", "$dynamicRef") and not (
                isinstance(value, str) and value.startswith("#")
            ):
                raise SchemaRejected(f"its input schema refers outside itself ({key})")
            if key in ("$id", "$schema", "$anchor", "$dynamicAnchor"):
                continue  # an $id would make "#…" refer to a document elsewhere
            out[key] = _without_regexes(value, depth + 1)
        return out
    if isinstance(node, list):
        return [_without_regexes(item, depth + 1) for item in node]
    return node


# Argument names whose short string values say where or what, not content: kept in the audit.
_PLACE_KEYS = _words(
    "path paths name uri url source destination directory dir folder file filename id"
)
MAX_KEPT_VALUE = 120


def audited_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """What the audit keeps of an MCP call's arguments: numbers, booleans, and short strings
    under names that say where (path, name, uri, …); every other value only as its digest and
    length, since a server's arguments may carry a file's content."""
    from hashlib import sha256

    def kept(key: str, value: Any) -> Any:
        place = key.lower() in _PLACE_KEYS or key.lower().endswith("_id")
        if value is None or isinstance(value, bool | int | float):
            return value
        if place and isinstance(value, str) and len(value) <= MAX_KEPT_VALUE:
            return value
        if place and isinstance(value, list) and all(isinstance(v, str) for v in value):
            return [kept(key, v) for v in value[:32]]
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return {"sha256": sha256(text.encode("utf-8", "replace")).hexdigest(), "len": len(text)}

    return {str(key): kept(str(key), value) for key, value in arguments.items()}
