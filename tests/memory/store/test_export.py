"""memory/store/export.py: an export round trip arrives pending, an import never lowers a
sensitivity, and anything that is not an export this version reads fails whole, naming why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory.store.errors import (
    ImportFormatError,
)
from memory.store.export import read_import
from memory.types import EventKind, FactSource, FactStatus, Sensitivity
from tests.support.memory_store import export_of, fact_dict, open_store

LOW, PERSONAL, SECRET = Sensitivity.LOW, Sensitivity.PERSONAL, Sensitivity.SECRET


def test_export_import_round_trip_arrives_pending(tmp_path, clock):
    source = open_store(tmp_path / "a.db", True, clock)
    dog = source.add("my dog is called Rex", sensitivity=LOW, category="pets").fact
    source.add("I have asthma", sensitivity=SECRET, category="health", reasons=["health"])
    source.add(
        "my home city is Paris",
        sensitivity=PERSONAL,
        slot="user.home_city",
        status=FactStatus.ACTIVE,
    )
    source.add(
        "my home city is Berlin",
        sensitivity=PERSONAL,
        slot="user.home_city",
        status=FactStatus.ACTIVE,
    )
    source.add_anchor("Call me Sam.")
    exported = json.loads(json.dumps(source.export_json()))
    markdown = source.export_markdown()
    assert EventKind.EXPORT in [e.kind for e in source.events()]

    assert exported["schema"] == "chamberlain.memory"
    assert exported["schema_version"] == 1
    assert len(exported["facts"]) == 4  # the superseded Paris included
    assert [a["text"] for a in exported["anchors"]] == ["Call me Sam."]
    for text in ("my dog is called Rex", "I have asthma", "Paris", "Berlin", "Call me Sam."):
        assert text in markdown

    # Into the same store: everything is already there.
    assert source.import_json(exported) == []
    assert source.get(dog.id).status is FactStatus.ACTIVE
    source.close()

    target = open_store(tmp_path / "b.db", False, clock)
    try:
        imported = target.import_json(exported)
        assert sorted(f.text for f in imported) == [
            "I have asthma",
            "my dog is called Rex",
            "my home city is Berlin",
        ]
        for fact in imported:
            assert fact.status is FactStatus.PENDING
            assert fact.source is FactSource.IMPORT
            assert target.get(fact.id) == fact
        asthma = next(f for f in imported if f.text == "I have asthma")
        assert (asthma.sensitivity, asthma.category, asthma.reasons) == (
            SECRET,
            "health",
            ["health"],
        )
        assert target.recall("dog") == []  # pending: not until approved
        assert target.anchors() == []  # anchors are pinned by hand, never imported
        assert target.import_json(exported) == []  # duplicates skipped
    finally:
        target.close()


def test_import_can_raise_sensitivity_but_never_lower_it(store):
    data = export_of(
        [
            fact_dict("I have asthma", sensitivity="personal"),
            fact_dict("I take insulin", sensitivity="secret"),
        ]
    )
    imported = store.import_json(
        data, sensitivity_floor=lambda text: SECRET if "asthma" in text else LOW
    )
    assert {f.text: f.sensitivity for f in imported} == {
        "I have asthma": SECRET,
        "I take insulin": SECRET,
    }


def _garbage() -> list[Any]:
    good = fact_dict("my dog is called Rex")
    return [
        None,
        [],
        "chamberlain.memory",
        {"schema": "other", "schema_version": 1, "facts": []},
        {"schema": "chamberlain.memory", "schema_version": 2, "facts": []},
        {"schema": "chamberlain.memory", "schema_version": "1", "facts": []},
        {"schema": "chamberlain.memory", "schema_version": True, "facts": []},
        {"schema": "chamberlain.memory", "schema_version": 1},
        {"schema": "chamberlain.memory", "schema_version": 1, "facts": {}},
        {**export_of([good]), "extra": 1},
        export_of([good, "not an object"]),
        export_of([good, {**good, "text": ""}]),
        export_of([good, {**good, "sensitivity": "top-secret"}]),
        export_of([good, {**good, "created_at": "yesterday"}]),
        export_of([good, {**good, "surprise": True}]),
        export_of([good, {k: v for k, v in good.items() if k != "text"}]),
        {**export_of([good]), "anchors": "none"},
        {**export_of([good]), "anchors": [{"id": "a", "text": "x"}]},
    ]


@pytest.mark.parametrize("data", _garbage(), ids=[f"garbage{i}" for i in range(len(_garbage()))])
def test_import_of_anything_else_fails_and_writes_nothing(store, data):
    store.add("an existing fact", sensitivity=LOW)
    events_before = store.events()
    with pytest.raises(ImportFormatError, match=r"(?i)nothing was imported"):
        store.import_json(data)
    assert store.count() == 1
    assert store.events() == events_before


# --- deeply nested imports -----------------------------------------------------------------------


def _nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_a_deeply_nested_import_is_a_clear_error_and_writes_nothing(store):
    data = {
        "schema": "chamberlain.memory",
        "schema_version": 1,
        "facts": [{"id": "a", "text": "my dog", "created_at": 1.0, "reasons": _nested(100_000)}],
    }
    with pytest.raises(ImportFormatError, match="nested too deeply"):
        store.import_json(data)
    assert store.count() == 0


def test_a_deeply_nested_import_file_is_a_clear_error_naming_the_file(tmp_path):
    path = tmp_path / "export.json"
    path.write_text("[" * 100_000, "utf-8")
    with pytest.raises(ImportFormatError) as caught:
        read_import(path)
    assert str(path) in str(caught.value)
    assert "nested too deeply" in str(caught.value)
    path.write_text('{"schema": ', "utf-8")
    with pytest.raises(ImportFormatError, match="not valid JSON"):
        read_import(path)
    assert read_import(_write(tmp_path / "ok.json", '{"a": 1}')) == {"a": 1}


def _write(path: Path, text: str) -> Path:
    path.write_text(text, "utf-8")
    return path
