"""The memory's export formats: schema-versioned JSON, readable Markdown, and import validation.

``build_export`` and ``render_markdown`` turn facts and anchors into what the user takes away;
``parse_import`` checks a JSON document against the export schema and returns the facts in it.
The store (``memory/store.py``) calls these and does the reading and writing.

What it must never do: accept anything it does not fully understand. An import with the wrong
schema name or version, an unknown key, or a malformed fact raises ``ImportFormatError`` naming
the problem, and nothing is imported. Nothing here touches the database.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from memory.db import MemoryStoreError
from memory.types import Anchor, Fact, FactStatus

EXPORT_SCHEMA = "chamberlain.memory"
EXPORT_VERSION = 1
MAX_IMPORT_FACTS = 100_000
_Record = TypeVar("_Record", Fact, Anchor)
_TOP_LEVEL_KEYS = {"schema", "schema_version", "exported_at", "facts", "anchors"}


class ImportFormatError(MemoryStoreError, ValueError):
    """An import document that is not a Chamberlain memory export this version understands."""


def build_export(
    facts: Sequence[Fact], anchors: Sequence[Anchor], exported_at: float
) -> dict[str, Any]:
    """The JSON export: every fact (pending, active, superseded history) and every anchor."""
    return {
        "schema": EXPORT_SCHEMA,
        "schema_version": EXPORT_VERSION,
        "exported_at": exported_at,
        "facts": [fact.model_dump(mode="json") for fact in facts],
        "anchors": [anchor.model_dump(mode="json") for anchor in anchors],
    }


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_markdown(facts: Sequence[Fact], anchors: Sequence[Anchor], exported_at: float) -> str:
    """A readable export, grouped as the user thinks of it: pinned, remembered, waiting, past."""
    lines = [
        "# Chamberlain memory",
        "",
        f"Exported {_when(exported_at)}: {len(facts)} facts, {len(anchors)} anchors.",
    ]
    lines += ["", "## Anchors (always in the prompt, in this order)", ""]
    lines += [f"{a.position + 1}. {_one_line(a.text)}" for a in anchors] or ["_None._"]
    sections = (
        (FactStatus.ACTIVE, "Remembered"),
        (FactStatus.PENDING, "Waiting for approval"),
        (FactStatus.SUPERSEDED, "Earlier versions"),
    )
    for status, title in sections:
        chosen = [f for f in facts if f.status is status]
        lines += ["", f"## {title} ({len(chosen)})", ""]
        if not chosen:
            lines.append("_None._")
        for fact in chosen:
            tags = [fact.sensitivity.value, fact.category, fact.source.value]
            if fact.slot:
                tags.append(fact.slot)
            lines.append(f"- {_one_line(fact.text)} — _{', '.join(tags)}_ (`{fact.id}`)")
            details = [f"added {_when(fact.created_at)}"]
            if fact.confirmed_at is not None:
                details.append(f"confirmed {_when(fact.confirmed_at)}")
            if fact.use_count:
                details.append(f"used {fact.use_count}×, last {_when(fact.last_used_at)}")
            if fact.expires_at is not None:
                details.append(f"expires {_when(fact.expires_at)}")
            if fact.superseded_by:
                details.append(f"replaced by `{fact.superseded_by}`")
            if fact.reasons:
                details.append("why " + fact.sensitivity.value + ": " + "; ".join(fact.reasons))
            lines.append(f"  - {'; '.join(details)}")
    return "\n".join(lines) + "\n"


def read_import(path: Path) -> object:
    """The JSON document in an import file, or ImportFormatError naming the file and what is
    wrong with it (unreadable, not UTF-8, not JSON, or nested too deeply to be an export:
    Python's parser gives up on a few thousand levels with a RecursionError)."""
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError:
        raise ImportFormatError(
            f"cannot import {path}: it is not UTF-8 text, so not a memory export; nothing was "
            "imported."
        ) from None
    except OSError as exc:
        raise ImportFormatError(
            f"cannot import {path}: {exc.strerror or exc}; nothing was imported."
        ) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(
            f"cannot import {path}: it is not valid JSON ({exc.msg} at line {exc.lineno}); "
            "nothing was imported."
        ) from None
    except RecursionError:
        raise ImportFormatError(
            f"cannot import {path}: its JSON is nested too deeply to be a memory export; "
            "nothing was imported."
        ) from None


def parse_import(data: object) -> list[Fact]:
    """The facts in an export document, validated strictly. Raises ImportFormatError."""
    if not isinstance(data, Mapping):
        raise ImportFormatError(
            "This is not a Chamberlain memory export (expected a JSON object); nothing was "
            "imported."
        )
    schema = data.get("schema")
    if schema != EXPORT_SCHEMA:
        raise ImportFormatError(
            f"This is not a Chamberlain memory export (schema {schema!r}, expected "
            f"{EXPORT_SCHEMA!r}); nothing was imported."
        )
    version = data.get("schema_version")
    if type(version) is not int or version != EXPORT_VERSION:
        raise ImportFormatError(
            f"This memory export has schema_version {version!r}; this version of Chamberlain "
            f"reads version {EXPORT_VERSION} only. Nothing was imported."
        )
    unknown = sorted(str(k) for k in data if k not in _TOP_LEVEL_KEYS)
    if unknown:
        raise ImportFormatError(
            f"This memory export has unknown keys ({', '.join(unknown)}); nothing was imported."
        )
    facts = data.get("facts")
    if not isinstance(facts, list):
        raise ImportFormatError('This memory export has no "facts" list; nothing was imported.')
    anchors = data.get("anchors", [])
    if not isinstance(anchors, list):
        raise ImportFormatError(
            'The "anchors" of this memory export are not a list; nothing was imported.'
        )
    if len(facts) > MAX_IMPORT_FACTS:
        raise ImportFormatError(
            f"This memory export has {len(facts)} facts, more than the {MAX_IMPORT_FACTS} one "
            "import takes; nothing was imported."
        )
    parsed: list[Fact] = []
    try:
        for index, item in enumerate(facts):
            parsed.append(_parse_item(Fact, item, f"fact {index + 1}"))
        for index, item in enumerate(anchors):
            _parse_item(Anchor, item, f"anchor {index + 1}")
    except RecursionError:
        raise ImportFormatError(
            "This memory export is nested too deeply to be one; nothing was imported."
        ) from None
    return parsed


def _parse_item(model: type[_Record], item: object, where: str) -> _Record:
    if not isinstance(item, Mapping):
        raise ImportFormatError(
            f"{where} of this memory export is not an object; nothing was imported."
        )
    try:
        # Strict, in JSON mode: no coercion of "1" into 1, and enums by their exported value.
        parsed = model.model_validate_json(json.dumps(item), strict=True)
    except (ValidationError, TypeError, ValueError) as exc:
        problems = _problems(exc)
        raise ImportFormatError(
            f"{where} of this memory export is not valid ({problems}); nothing was imported."
        ) from None
    if not parsed.text.strip():
        raise ImportFormatError(f"{where} of this memory export has no text; nothing was imported.")
    return parsed


def _problems(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        # Field names and error kinds only: the input values may be the user's facts.
        parts = [
            f"{'.'.join(str(p) for p in error['loc']) or 'value'}: {error['type']}"
            for error in exc.errors()[:3]
        ]
        return "; ".join(parts)
    return type(exc).__name__
