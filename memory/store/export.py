"""Export and import: schema-versioned JSON, readable Markdown, and strict import validation.

``build_export`` and ``render_markdown`` turn facts and anchors into what the user takes away;
``read_import`` reads an import file and ``parse_import`` checks its document against the
export schema and returns the facts in it. These functions touch no database. ``ExportMethods``
is the store's side, through sqlite-utils (loaded only for these: neither is a path a turn
takes): an export reads every fact and anchor in one snapshot and logs an EXPORT event; an
import writes in one transaction, every fact arriving as a new PENDING fact with source
``import``.

What it must never do: accept anything it does not fully understand. An import with the wrong
schema name or version, an unknown key, or a malformed fact raises ``ImportFormatError`` naming
the problem (field names and error kinds, never the values: they may be the user's facts), and
nothing is imported. An import is all or nothing: a refused credential or one invalid fact
writes nothing. It never imports a fact as active, lowers a sensitivity, re-pins an anchor (the
user pins those again by hand), or writes an event that holds a text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from memory.slots import normalise
from memory.store.connection import StoreConnection
from memory.store.errors import ImportFormatError, InvalidInputError
from memory.store.rows import (
    FACT_COLUMNS,
    MAX_EVIDENCE_CHARS,
    fact_from_record,
    fact_record,
    merge_reasons,
    new_id,
    text_digest,
)
from memory.types import Anchor, EventKind, Fact, FactSource, FactStatus, Sensitivity, highest

log = logging.getLogger("chamberlain.memory.store")

EXPORT_SCHEMA = "chamberlain.memory"
EXPORT_VERSION = 1
MAX_IMPORT_FACTS = 100_000
_Record = TypeVar("_Record", Fact, Anchor)
_TOP_LEVEL_KEYS = {"schema", "schema_version", "exported_at", "facts", "anchors"}


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


class ExportMethods(StoreConnection):
    """``MemoryStore``'s export and import (see the module docstring)."""

    def _everything(self) -> tuple[list[Fact], list[Anchor]]:
        """Every fact and anchor, in one read snapshot, through sqlite-utils (loaded here:
        export is not a path a turn takes)."""
        with self._read():
            db = self._database.db
            facts = db.table("facts").rows_where(
                select=", ".join(FACT_COLUMNS), order_by="created_at, seq"
            )
            anchors = db.table("anchors").rows_where(order_by="position, created_at")
            return [fact_from_record(r) for r in facts], [Anchor.model_validate(r) for r in anchors]

    def _log_export(self, what: str, body: str, facts: int, anchors: int) -> None:
        now = self._now()
        with self._write() as conn:
            self._event(
                conn,
                EventKind.EXPORT,
                None,
                now,
                text=body,
                detail=f"{what}: facts={facts} anchors={anchors}",
            )

    def export_json(self) -> dict[str, Any]:
        """Everything, schema-versioned: facts of every status (history included), anchors."""
        facts, anchors = self._everything()
        data = build_export(facts, anchors, self._now())
        self._log_export("json", json.dumps(data, sort_keys=True), len(facts), len(anchors))
        return data

    def export_markdown(self) -> str:
        """Everything, for reading."""
        facts, anchors = self._everything()
        body = render_markdown(facts, anchors, self._now())
        self._log_export("markdown", body, len(facts), len(anchors))
        return body

    def import_json(
        self,
        data: object,
        *,
        sensitivity_floor: Callable[[str], Sensitivity] | None = None,
    ) -> list[Fact]:
        """Import an export: each pending or active fact arrives as a new PENDING fact with
        source ``import`` (text, subject, slot, category, reasons, evidence and expiry kept;
        sensitivity at least as given, and at least ``sensitivity_floor(text)`` when the caller
        passes its detectors). Superseded versions, expired facts and duplicates of stored (or
        earlier imported) facts are skipped. Anchors are validated but not imported: they go
        into every prompt, so the user pins them again by hand. All or nothing: any invalid
        fact, or a refused credential, raises and nothing is written.
        """
        records = parse_import(data)
        now = self._now()
        prepared: list[Fact] = []
        for index, record in enumerate(records):
            if record.status is FactStatus.SUPERSEDED:
                continue
            if record.expires_at is not None and record.expires_at <= now:
                continue
            try:
                text = self._check_text(record.text)
            except InvalidInputError as exc:
                raise ImportFormatError(f"fact {index + 1}: {exc}") from None
            self._screen(text, record.evidence)
            level = record.sensitivity
            if sensitivity_floor is not None:
                level = highest(level, sensitivity_floor(text))
            prepared.append(
                Fact(
                    id=new_id(),
                    text=text,
                    subject=record.subject,
                    slot=record.slot,
                    category=record.category.strip() or "general",
                    sensitivity=level,
                    reasons=merge_reasons(record.reasons),
                    status=FactStatus.PENDING,
                    source=FactSource.IMPORT,
                    evidence=record.evidence[:MAX_EVIDENCE_CHARS],
                    created_at=now,
                    expires_at=record.expires_at,
                )
            )
        imported: list[Fact] = []
        with self._write("nothing was imported") as conn:
            seen: set[str] = set()
            for fact in prepared:
                digest = text_digest(normalise(fact.text))
                if digest in seen:
                    continue
                seen.add(digest)
                exists = conn.execute(
                    "SELECT 1 FROM facts WHERE norm_digest = ? AND status != 'superseded'",
                    (digest,),
                ).fetchone()
                if not exists:
                    imported.append(fact)
            # sqlite-utils writes the rows in batches, inside this transaction; the triggers
            # index each fact's text as it is inserted.
            db = self._database.db
            db.table("facts").insert_all(fact_record(fact) for fact in imported)
            db.table("events").insert_all(
                {
                    "kind": EventKind.IMPORT.value,
                    "fact_id": fact.id,
                    "at": now,
                    "digest": text_digest(fact.text),
                    "detail": f"pending sensitivity={fact.sensitivity.value}",
                }
                for fact in imported
            )
        log.info("imported %d of %d facts (as pending)", len(imported), len(records))
        return imported
