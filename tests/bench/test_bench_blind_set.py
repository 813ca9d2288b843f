"""bench.blind_set: the score of record for a blind set, as issue 24 reports it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.blind_set import main
from broker.router import route
from broker.types import Intent

REPO = Path(__file__).resolve().parents[2]


def write_set(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_set_is_scored_per_intent_with_traps_offers_and_misses(tmp_path, capsys) -> None:
    rows = [
        {"text": "take a screenshot", "intent": "screen_observe"},
        # Labelled wrongly on purpose: counted as missed, and listed.
        {"text": "remember that my dog is called Rex", "intent": "chat_only", "note": "a trap"},
        # Labelled a memory write, and read as a lookup: missed, and not offered (no fact in it).
        {"text": "weather in Leeds tomorrow", "intent": "memory_write"},
    ]
    assert route("weather in Leeds tomorrow").intent is Intent.LOOKUP_SEARCH
    assert main([str(write_set(tmp_path / "set.jsonl", rows)), "--misses"]) == 0
    out = capsys.readouterr().out
    assert ": 1/3 (33.3 %)" in out
    assert "screen_observe       1/1\n" in out
    assert "chat_only            0/1  below 85 %" in out
    assert "memory_write         0/1  below 85 %" in out
    assert "traps right 0/1" in out
    assert "memory writes missed 1, offered 0; false offers 0" in out
    assert "miss: chat_only → memory_write: remember that my dog is called Rex" in out
    assert "miss: memory_write → lookup_search: weather in Leeds tomorrow" in out


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("{not json", "not JSON"),
        ('{"text": "hello", "intent": "small_talk"}', "unknown intent 'small_talk'"),
        ('{"intent": "chat_only"}', 'a line needs "text" and "intent"'),
    ],
)
def test_a_bad_line_names_its_file_and_line_and_scores_nothing(tmp_path, line, said) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "hi", "intent": "chat_only"}\n' + line + "\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "bench.blind_set", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert f"{path}:2: {said}" in proc.stderr
    assert "==" not in proc.stdout
