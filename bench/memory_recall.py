"""How fast memory recalls, how fast it writes, and how big it gets — encrypted and plaintext.

    python -m bench.memory_recall [--sizes 1000,10000,100000] [--queries 200] [--adds 1000]
                                  [--dir DIR] [--json]

For each size, builds a store of that many synthetic facts (names, places, pets, foods, jobs,
dates, habits — the kind of thing people ask an assistant to remember, with a few thousand
distinct words) in a temporary directory, once encrypted (SQLCipher, raw 32-byte key) and once
plaintext, then measures:

- recall: ``MemoryStore.recall()`` end to end — the FTS5 query, the blended ranking, and the
  USED bookkeeping it commits — for ~200 varied queries (p50, p99, mean, max in ms);
- the baselines, on the same file, connection and queries, in the same run: a bare
  ``SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? LIMIT k`` (the MATCH expression recall
  builds from the query, k = recall's default limit), and the same ordered by FTS5's bm25 rank
  (``ORDER BY rank LIMIT k``: the index work recall cannot avoid, since it returns the best
  matches, not the first ones). The report gives recall's p50 over each baseline's p50, and,
  to show where recall's time goes, recall's own query and ranking without the USED
  bookkeeping (its read-only path, as when the disk is full);
- bytes per fact: the file size after a WAL checkpoint, divided by the number of facts (the
  ADD events the store writes with each fact are included, as they would be).

Building 100k facts with ``add()`` (one durable transaction each) would take minutes, so the
stores are filled with the same INSERTs ``add()`` issues, batched into large transactions.
Write throughput is measured honestly apart from that: ``--adds`` calls to ``add()`` into a
fresh store, one transaction (and one WAL fsync) each, as the store always does.

Everything is written inside a temporary directory that is removed afterwards; ``--dir``
chooses where it is created (fsync on a RAM disk is free, so measure where the Chamberlain home
lives). A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.machine import filesystem_of, machine_details
from core.clock import ManualClock
from memory.db import open_database, schema_version
from memory.store.facts import MemoryStore
from memory.store.recall import build_match_query, query_terms
from memory.types import (
    SENSITIVITY_ORDER,
    EventKind,
    Fact,
    FactSource,
    FactStatus,
    Sensitivity,
)

TARGET_P50_MS = 5.0
# Issue 8: recall p50 at 100k facts at most this many times a bare FTS5 MATCH's p50.
TARGET_RATIO = 2.0
RECALL_LIMIT = 5  # MemoryStore.recall()'s default limit, and the baselines' LIMIT
BARE_SQL = "SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? LIMIT ?"
RANKED_SQL = "SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? ORDER BY rank LIMIT ?"
KEY = bytes(range(32))
START = 1_700_000_000.0


def _words(text: str) -> list[str]:
    return text.split()


NAMES = _words(
    "Anna Ben Clara David Elena Farid Greta Hugo Ines Jonas Kira Leo Maya Nils Olga Pablo "
    "Quinn Rosa Sami Tara Umar Vera Wim Xenia Yusuf Zoe Amira Bruno Chen Dara Emil Fatima Gus "
    "Hana Ivan Jade Karim Lena Marco Nora Omar Petra Rafael Sofia Tomas Ulla Viktor"
)
RELATIONS = _words(
    "sister brother mother father daughter son wife husband partner friend colleague "
    "neighbour cousin aunt uncle grandmother grandfather boss flatmate godson"
)
CITIES = _words(
    "Paris Berlin Lisbon Madrid Rome Vienna Prague Warsaw Oslo Dublin Zurich Lyon Porto "
    "Munich Hamburg Krakow Seville Turin Bergen Ghent Leeds Bristol Utrecht Basel Graz"
)
FOODS = _words(
    "peanuts shellfish gluten lactose strawberries sesame eggs soy kiwi mustard celery "
    "walnuts cashews shrimp mango penicillin pollen cats dogs dust latex bees"
)
DISHES = _words(
    "risotto ramen lasagne curry paella tacos sushi falafel goulash pho dumplings pancakes "
    "couscous moussaka burritos gnocchi"
)
JOBS = _words(
    "nurse teacher architect plumber accountant designer engineer librarian chef pilot "
    "journalist pharmacist carpenter translator researcher electrician"
)
PETS = _words("dog cat parrot rabbit hamster tortoise goldfish ferret horse")
HOBBIES = _words(
    "climbing chess pottery running swimming cycling painting gardening baking knitting "
    "photography rowing fencing birdwatching kayaking sailing woodworking yoga"
)
DAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
MONTHS = _words("January February March April May June July August September October November")
COLOURS = _words("blue green red yellow purple orange teal black white grey")
SYLLABLES = _words("ka lo mi ne ru sa ti vo ze bra cle dri fo gu ha jo ke lu mo pa qui ro si tu")


def _pseudo_words(rng: random.Random, n: int) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def make_texts(n: int, seed: int = 7) -> list[str]:
    """n distinct fact texts from templates, with rarer words mixed in."""
    rng = random.Random(seed)
    extra = _pseudo_words(rng, 4000)
    templates = (
        lambda: f"my {rng.choice(RELATIONS)} {rng.choice(NAMES)} lives in {rng.choice(CITIES)}",
        lambda: f"I am allergic to {rng.choice(FOODS)}",
        lambda: f"I work as a {rng.choice(JOBS)} in {rng.choice(CITIES)}",
        lambda: f"I have a {rng.choice(PETS)} called {rng.choice(NAMES)}",
        lambda: f"my favourite dish is {rng.choice(DISHES)} with {rng.choice(FOODS)}",
        lambda: f"{rng.choice(NAMES)}'s birthday is on {rng.choice(MONTHS)} {rng.randint(1, 28)}",
        lambda: f"I go {rng.choice(HOBBIES)} every {rng.choice(DAYS)} with {rng.choice(NAMES)}",
        lambda: (
            f"my {rng.choice(RELATIONS)} prefers {rng.choice(COLOURS)} over {rng.choice(COLOURS)}"
        ),
        lambda: (
            f"I am learning {rng.choice(HOBBIES)} from {rng.choice(NAMES)} in {rng.choice(CITIES)}"
        ),
        lambda: f"the {rng.choice(PETS)} needs its medicine on {rng.choice(DAYS)} mornings",
    )
    texts: list[str] = []
    seen: set[str] = set()
    while len(texts) < n:
        text = rng.choice(templates)()
        # A couple of rarer words make facts distinct and the vocabulary realistically wide.
        text += " " + " ".join(rng.sample(extra, rng.randint(1, 3)))
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


def make_queries(n: int, seed: int = 11) -> list[str]:
    """Varied messages, as a user would type them: questions, keywords, misses."""
    rng = random.Random(seed)
    extra = _pseudo_words(random.Random(7), 4000)
    shapes = (
        lambda: f"where does my {rng.choice(RELATIONS)} live?",
        lambda: f"am I allergic to {rng.choice(FOODS)}",
        lambda: f"allergy {rng.choice(FOODS).rstrip('s')}",
        lambda: f"what is my {rng.choice(PETS)} called",
        lambda: f"when is {rng.choice(NAMES)}'s birthday?",
        lambda: f"what do I do on {rng.choice(DAYS)}",
        lambda: f"recommend a {rng.choice(DISHES)} recipe",
        lambda: f"{rng.choice(HOBBIES)} lessons in {rng.choice(CITIES)}",
        lambda: f"tell me about {rng.choice(extra)}",
        lambda: f"what's the weather like in {rng.choice(CITIES)} today",
        lambda: "what do you remember about my job",
        lambda: f"my {rng.choice(RELATIONS)} {rng.choice(NAMES)}",
    )
    return [rng.choice(shapes)() for _ in range(n)]


# The bench's moment: a year after the facts it fills were stamped, standing still.
BENCH_NOW = START + 365 * 86400


def open_store(path: Path, encrypted: bool) -> MemoryStore:
    db = open_database(path, key=KEY if encrypted else None, encrypted=encrypted)
    return MemoryStore(db, ManualClock(BENCH_NOW))


def bulk_fill(store: MemoryStore, texts: list[str], batch: int = 5000) -> None:
    """The INSERTs add() makes (fact + ADD event), in large transactions — for building only.
    It goes through the store's private write helpers on purpose: the public API has (and
    should have) no way to write without dedupe, supersede and the refuse hook."""
    rng = random.Random(3)
    for start in range(0, len(texts), batch):
        with store._write() as conn:
            for i, text in enumerate(texts[start : start + batch], start):
                created = START + i * (365 * 86400 / len(texts))
                fact = Fact(
                    id=os.urandom(8).hex(),
                    text=text,
                    category=rng.choice(("general", "people", "health", "work", "places")),
                    sensitivity=rng.choice(list(Sensitivity)),
                    status=FactStatus.ACTIVE,
                    source=FactSource.USER_EXPLICIT,
                    evidence=f"remember that {text}",
                    created_at=created,
                    confirmed_at=created if i % 5 == 0 else None,
                )
                store._insert(conn, fact)
                store._event(conn, EventKind.ADD, fact.id, created, text=text)


def summary_ms(samples: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {
        "p50": round(cuts[49], 3),
        "p99": round(cuts[98], 3),
        "mean": round(statistics.fmean(samples), 3),
        "max": round(max(samples), 3),
    }


def measure_recall(store: MemoryStore, queries: list[str]) -> tuple[dict[str, float], float]:
    for query in queries[:20]:  # warm the page cache and the statement cache
        store.recall(query)
    times: list[float] = []
    hits = 0
    for query in queries:
        start = time.perf_counter()
        found = store.recall(query)
        times.append((time.perf_counter() - start) * 1000)
        hits += bool(found)
    return summary_ms(times), hits / len(queries)


def measure_bare(store: MemoryStore, queries: list[str], sql: str) -> dict[str, float]:
    """One FTS5 query per message on the store's own connection: the same MATCH expression
    recall builds, fetched to the end, nothing else (no filters, no ranking blend, no writes).
    A message with no words is timed as recall handles it: no query at all."""
    conn = store.database.conn
    matches = [build_match_query(query) for query in queries]

    def once(match: str | None) -> None:
        if match is not None:
            conn.execute(sql, (match, RECALL_LIMIT)).fetchall()

    for match in matches[:20]:  # the same warm-up recall gets
        once(match)
    times: list[float] = []
    for match in matches:
        start = time.perf_counter()
        once(match)
        times.append((time.perf_counter() - start) * 1000)
    return summary_ms(times)


def measure_recall_read_only(store: MemoryStore, queries: list[str]) -> dict[str, float]:
    """recall() minus its bookkeeping: the same query, filters and ranking, through the
    read-only path recall falls back to when use counts cannot be written. Private on purpose
    (like bulk_fill): it splits recall's time into finding and counting."""
    at = BENCH_NOW
    every_level = SENSITIVITY_ORDER[Sensitivity.SECRET]  # recall()'s default max_sensitivity

    def once(query: str) -> None:
        terms = query_terms(query)
        if terms:
            with store._read() as conn:
                store._recall_in(
                    conn, terms, " OR ".join(terms), every_level, at, RECALL_LIMIT, count_use=False
                )

    for query in queries[:20]:
        once(query)
    times: list[float] = []
    for query in queries:
        start = time.perf_counter()
        once(query)
        times.append((time.perf_counter() - start) * 1000)
    return summary_ms(times)


def measure_forget(store: MemoryStore, n: int = 5) -> dict[str, float]:
    """forget() of single facts: the delete, the full-text index merge, the WAL checkpoint."""
    ids = [f.id for f in store.facts(limit=n)]
    times: list[float] = []
    for fact_id in ids:
        start = time.perf_counter()
        store.forget(fact_id)
        times.append((time.perf_counter() - start) * 1000)
    return {"median": round(statistics.median(times), 1), "max": round(max(times), 1)}


def file_bytes(path: Path) -> int:
    return sum(
        p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()
    )


def measure_size(
    directory: Path, size: int, texts: list[str], queries: list[str]
) -> dict[str, Any]:
    result: dict[str, Any] = {"facts": size}
    for encrypted in (True, False):
        label = "encrypted" if encrypted else "plaintext"
        path = directory / f"recall-{size}-{label}.db"
        store = open_store(path, encrypted)
        start = time.perf_counter()
        bulk_fill(store, texts[:size])
        build_s = time.perf_counter() - start
        store.database.checkpoint()
        per_fact = path.stat().st_size / size
        recall, hit_rate = measure_recall(store, queries)
        bare = measure_bare(store, queries, BARE_SQL)
        ranked = measure_bare(store, queries, RANKED_SQL)
        read_only = measure_recall_read_only(store, queries)
        forget_ms = measure_forget(store)
        store.close()
        reopen_start = time.perf_counter()
        store = open_store(path, encrypted)
        open_ms = (time.perf_counter() - reopen_start) * 1000
        start = time.perf_counter()
        check = store.integrity_check()
        check_ms = (time.perf_counter() - start) * 1000
        store.close()
        result[label] = {
            "recall_ms": recall,
            "bare_match_ms": bare,
            "ranked_match_ms": ranked,
            "recall_read_only_ms": read_only,
            "recall_over_bare_p50": round(recall["p50"] / bare["p50"], 2),
            "recall_over_ranked_p50": round(recall["p50"] / ranked["p50"], 2),
            "queries_with_a_hit": round(hit_rate, 3),
            "bytes_per_fact": round(per_fact, 1),
            "file_bytes": path.stat().st_size,
            "forget_ms": forget_ms,
            "bulk_build_s": round(build_s, 2),
            "open_ms": round(open_ms, 2),
            "integrity_check_ms": round(check_ms, 1),
            "integrity": check,
        }
    return result


def measure_adds(directory: Path, n: int, texts: list[str]) -> dict[str, Any]:
    """add() one at a time, as the store always writes: one durable transaction each."""
    result: dict[str, Any] = {"adds": n}
    for encrypted in (True, False):
        label = "encrypted" if encrypted else "plaintext"
        path = directory / f"adds-{label}.db"
        with contextlib.closing(open_store(path, encrypted)) as store:
            times: list[float] = []
            start = time.perf_counter()
            for text in texts[:n]:
                t0 = time.perf_counter()
                store.add(text, sensitivity=Sensitivity.LOW)
                times.append((time.perf_counter() - t0) * 1000)
            elapsed = time.perf_counter() - start
        result[label] = {
            "facts_per_s": round(n / elapsed, 1),
            "add_ms": summary_ms(times),
            "file_bytes": file_bytes(path),
        }
    return result


def machine(directory: Path) -> dict[str, Any]:
    import sqlcipher3  # type: ignore[import-untyped]

    conn = sqlcipher3.connect(":memory:")
    sqlite_version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    cipher_version = conn.execute("PRAGMA cipher_version").fetchone()[0]
    conn.close()
    return {
        **machine_details(),
        "sqlite": sqlite_version,
        "sqlcipher": cipher_version,
        "schema": schema_version(),
        "dir_filesystem": filesystem_of(directory),
    }


@contextlib.contextmanager
def workdir(parent: Path | None) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-memory-", dir=parent) as tmp:
        yield Path(tmp)


def run(sizes: list[int], n_queries: int, n_adds: int, parent: Path | None) -> dict[str, Any]:
    texts = make_texts(max([*sizes, n_adds]))
    queries = make_queries(n_queries)
    with workdir(parent) as directory:
        report: dict[str, Any] = {
            "machine": machine(directory),
            "target_recall_p50_ms": TARGET_P50_MS,
            "target_recall_over_bare_p50": TARGET_RATIO,
            "baseline_sql": {"bare": BARE_SQL, "ranked": RANKED_SQL, "k": RECALL_LIMIT},
            "queries": n_queries,
            "sizes": [measure_size(directory, size, texts, queries) for size in sizes],
            "writes": measure_adds(directory, n_adds, texts),
        }
    return report


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"machine: {m['cpu']}, {m['nproc']} CPUs, {m['ram']} RAM; {m['uname']}",
        f"python {m['python']}, SQLite {m['sqlite']}, SQLCipher {m['sqlcipher']}; "
        f"files on {m['dir_filesystem']}; load {m['load_average']}; {m['date']}",
        "",
        f"recall() end to end over {report['queries']} queries "
        f"(target p50 ≤ {report['target_recall_p50_ms']} ms at 100k)",
        f"{'facts':>8} {'mode':<10}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'hit %':>7}"
        f"{'B/fact':>8}{'open ms':>9}{'forget ms':>11}{'check ms':>10}",
    ]
    for entry in report["sizes"]:
        for label in ("encrypted", "plaintext"):
            r = entry[label]
            lines.append(
                f"{entry['facts']:>8} {label:<10}{r['recall_ms']['p50']:>9.2f}"
                f"{r['recall_ms']['p99']:>9.2f}{r['recall_ms']['max']:>9.2f}"
                f"{r['queries_with_a_hit'] * 100:>7.0f}{r['bytes_per_fact']:>8.0f}"
                f"{r['open_ms']:>9.1f}{r['forget_ms']['median']:>11.1f}"
                f"{r['integrity_check_ms']:>10.1f}"
            )
    lines += [
        "",
        f"baselines on the same rows and queries, LIMIT {RECALL_LIMIT} (target: recall p50 ≤ "
        f"{report['target_recall_over_bare_p50']}× the bare MATCH p50 at 100k)",
        f"{'facts':>8} {'mode':<10}{'recall':>9}{'no-count':>9}{'bare':>9}{'ranked':>9}"
        f"{'÷bare':>8}{'÷ranked':>9}   (p50 ms; ratios of p50s)",
    ]
    for entry in report["sizes"]:
        for label in ("encrypted", "plaintext"):
            r = entry[label]
            lines.append(
                f"{entry['facts']:>8} {label:<10}{r['recall_ms']['p50']:>9.2f}"
                f"{r['recall_read_only_ms']['p50']:>9.2f}{r['bare_match_ms']['p50']:>9.3f}{r['ranked_match_ms']['p50']:>9.2f}"
                f"{r['recall_over_bare_p50']:>8.1f}{r['recall_over_ranked_p50']:>9.2f}"
            )
    writes = report["writes"]
    lines += ["", f"add(), one durable transaction each, {writes['adds']} facts into a new store"]
    for label in ("encrypted", "plaintext"):
        w = writes[label]
        lines.append(
            f"  {label:<10}{w['facts_per_s']:>9.0f} facts/s   p50 {w['add_ms']['p50']:.2f} ms, "
            f"p99 {w['add_ms']['p99']:.2f} ms"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory_recall", description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated fact counts")
    parser.add_argument("--queries", type=int, default=200, help="recall queries per store")
    parser.add_argument("--adds", type=int, default=1000, help="add() calls for write throughput")
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temp dir")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error("--sizes takes comma-separated integers, e.g. 1000,10000")
    if not sizes or min(sizes) < 1 or args.queries < 2 or args.adds < 2:
        parser.error("sizes must be positive; --queries and --adds at least 2")
    report = run(sizes, args.queries, args.adds, args.dir)
    sys.stdout.write((json.dumps(report, indent=2) if args.json else render(report)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
