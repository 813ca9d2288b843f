"""bench/memory_recall.py runs end to end and reports the figures docs/BENCHMARKS.md quotes.

Tiny sizes, real stores (SQLCipher and plaintext files in tmp dirs). No timing is asserted: on a
shared machine that would only flake. What is asserted is the report's shape, that both modes
were measured, that recall found the facts it was asked about, and that the benchmark cleans up.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import memory_recall
from bench.memory_recall import bulk_fill, make_queries, make_texts, open_store

MODES = ("encrypted", "plaintext")
SUMMARY_KEYS = {"p50", "p99", "mean", "max"}


def test_memory_recall_reports_every_size_and_mode(tmp_path: Path, capsys) -> None:
    argv = ["--sizes", "50,200", "--queries", "12", "--adds", "10", "--json", "--dir"]
    assert memory_recall.main([*argv, str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)

    assert set(report["machine"]) >= {"uname", "cpu", "nproc", "python", "sqlcipher", "date"}
    assert report["target_recall_p50_ms"] == memory_recall.TARGET_P50_MS
    assert report["queries"] == 12
    assert report["target_recall_over_bare_p50"] == memory_recall.TARGET_RATIO == 2.0
    assert report["baseline_sql"]["bare"] == (
        "SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? LIMIT ?"
    )
    assert [entry["facts"] for entry in report["sizes"]] == [50, 200]
    for entry in report["sizes"]:
        for mode in MODES:
            r = entry[mode]
            assert set(r["recall_ms"]) == SUMMARY_KEYS, (entry["facts"], mode)
            assert 0 < r["recall_ms"]["p50"] <= r["recall_ms"]["max"]
            # Most of the queries name something the synthetic facts contain.
            assert r["queries_with_a_hit"] >= 0.5, (entry["facts"], mode)
            # bytes_per_fact is taken right after the fill; file_bytes at the end, after the
            # recalls' USED events and the forgets, so the two need not agree.
            assert r["bytes_per_fact"] > 0
            assert r["file_bytes"] > 0
            assert set(r["forget_ms"]) == {"median", "max"}
            assert r["open_ms"] > 0
            assert r["integrity"] == "ok"
            # The baselines ran on the same store and queries, and the ratios are recall's p50
            # over theirs.
            for baseline in ("bare_match_ms", "ranked_match_ms", "recall_read_only_ms"):
                assert set(r[baseline]) == SUMMARY_KEYS, (entry["facts"], mode, baseline)
                assert 0 < r[baseline]["p50"] <= r[baseline]["max"]
            for ratio, baseline in (
                ("recall_over_bare_p50", "bare_match_ms"),
                ("recall_over_ranked_p50", "ranked_match_ms"),
            ):
                expected = r["recall_ms"]["p50"] / r[baseline]["p50"]
                assert r[ratio] == pytest.approx(expected, abs=0.01), (entry["facts"], mode)

    writes = report["writes"]
    assert writes["adds"] == 10
    for mode in MODES:
        assert writes[mode]["facts_per_s"] > 0
        assert set(writes[mode]["add_ms"]) == SUMMARY_KEYS
        assert writes[mode]["file_bytes"] > 0
    # Everything was written inside the temporary directory, which is gone again.
    assert list(tmp_path.iterdir()) == []


def test_memory_recall_text_report(tmp_path: Path, capsys) -> None:
    argv = ["--sizes", "40", "--queries", "4", "--adds", "3", "--dir", str(tmp_path)]
    assert memory_recall.main(argv) == 0
    text = capsys.readouterr().out
    assert "target p50 ≤ 5.0 ms at 100k" in text
    assert "      40 encrypted" in text
    assert "      40 plaintext" in text
    assert "target: recall p50 ≤ 2.0× the bare MATCH p50 at 100k" in text
    assert "add(), one durable transaction each, 3 facts into a new store" in text
    assert list(tmp_path.iterdir()) == []


def test_memory_recall_rejects_sizes_it_cannot_measure(capsys) -> None:
    for argv in (["--sizes", "0"], ["--sizes", "a,b"], ["--queries", "1"], ["--adds", "1"]):
        with pytest.raises(SystemExit) as exc:
            memory_recall.main(argv)
        assert exc.value.code == 2, argv
    capsys.readouterr()


@pytest.mark.parametrize("encrypted", [True, False], ids=MODES)
def test_bulk_filled_store_recalls_its_facts(tmp_path: Path, encrypted: bool) -> None:
    """The stores the benchmark times hold what it says: every fact, findable by recall."""
    texts = make_texts(200)
    assert len(set(texts)) == 200
    path = tmp_path / "bench.db"
    store = open_store(path, encrypted)
    try:
        bulk_fill(store, texts, batch=64)
        assert len(store.facts(limit=500)) == 200
        for text in texts[::25]:
            found = store.recall(text)
            assert found, text
            assert found[0].text == text
        assert any(store.recall(query) for query in make_queries(10))
        assert store.integrity_check() == "ok"
    finally:
        store.close()
    header = path.read_bytes()[:16]
    assert (header == b"SQLite format 3\x00") is not encrypted
