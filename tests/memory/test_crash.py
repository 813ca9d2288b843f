"""A process killed with SIGKILL in the middle of many writes loses nothing it committed.

A real child process opens a real store (plaintext, and separately encrypted) and writes in a
loop, printing each fact id only after add() returned, i.e. after its transaction committed.
The parent reads a few hundred ids, kills the child without warning while it is still writing,
reopens the file and checks it: SQLite's integrity check passes, every reported id is there,
and a multi-fact write (an import) is all there or not there at all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory.db import open_database
from memory.store.facts import MemoryStore
from memory.types import FactSource

ROOT = Path(__file__).resolve().parents[2]
KEY_HEX = bytes(range(32)).hex()

_PRELUDE = r"""
import sys
from pathlib import Path
from memory.db import open_database
from memory.store.facts import MemoryStore
from memory.types import Sensitivity

path, mode, key_hex = sys.argv[1], sys.argv[2], sys.argv[3]
encrypted = mode == "encrypted"
database = open_database(
    Path(path), key=bytes.fromhex(key_hex) if encrypted else None, encrypted=encrypted
)
store = MemoryStore(database)
"""

ADDS = (
    _PRELUDE
    + r"""
i = 0
while True:
    slot = f"user.slot{i % 7}" if i % 3 == 0 else None
    outcome = store.add(
        f"crash test fact {i} about item{i} " + "padding " * (i % 40),
        sensitivity=Sensitivity.LOW,
        slot=slot,
    )
    print(outcome.fact.id, flush=True)
    if i % 10 == 0:
        store.recall(f"item{i - 5} crash")
    if i % 50 == 25 and slot is None:  # a slotted fact would take its history with it
        store.forget(outcome.fact.id)
        print("forgot", outcome.fact.id, flush=True)
    i += 1
"""
)

IMPORTS = (
    _PRELUDE
    + r"""
BATCH = 40
n = 0
while True:
    facts = [
        {"id": f"x{n}-{j}", "text": f"imported fact {n} number {j}", "created_at": 1.0}
        for j in range(BATCH)
    ]
    data = {"schema": "chamberlain.memory", "schema_version": 1, "facts": facts, "anchors": []}
    store.import_json(data)
    print(n, flush=True)
    n += 1
"""
)


def _run_and_kill(script: str, path: Path, mode: str, lines_wanted: int) -> list[str]:
    """Start the child, read `lines_wanted` lines, SIGKILL it mid-write, return every full line
    it printed (each one printed only after its write committed)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(path), mode, KEY_HEX],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while len(lines) < lines_wanted:
            line = child.stdout.readline()
            if not line:
                stderr = child.stderr.read() if child.stderr else ""
                pytest.fail(f"the writer stopped early (exit {child.poll()}): {stderr[-2000:]}")
            lines.append(line)
            assert time.monotonic() < deadline, "the writer is too slow"
        # Still writing: the kill lands in the middle of some transaction.
        assert child.poll() is None
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    rest, _ = child.communicate()
    # Everything the child managed to print before it died; a cut-off last line is dropped.
    lines += rest.splitlines(keepends=True)
    return [line.strip() for line in lines if line.endswith("\n")]


def _reopen(path: Path, mode: str) -> MemoryStore:
    encrypted = mode == "encrypted"
    key = bytes.fromhex(KEY_HEX) if encrypted else None
    return MemoryStore(open_database(path, key=key, encrypted=encrypted))


@pytest.mark.parametrize("mode", ["plaintext", "encrypted"])
def test_sigkill_during_adds_loses_no_committed_fact(tmp_path, mode):
    path = tmp_path / "memory.db"
    lines = _run_and_kill(ADDS, path, mode, lines_wanted=300)
    forgotten = {line.split()[1] for line in lines if line.startswith("forgot ")}
    committed = [line for line in lines if not line.startswith("forgot ")]
    assert len(committed) >= 290

    store = _reopen(path, mode)
    try:
        assert store.integrity_check() == "ok"
        missing = [
            fact_id
            for fact_id in committed
            if fact_id not in forgotten and store.get(fact_id) is None
        ]
        assert missing == []
        assert all(store.get(fact_id) is None for fact_id in forgotten)
        assert store.count() >= len(committed) - len(forgotten)
        # The store is fully usable after the crash.
        assert store.add("after the crash", sensitivity="low").action == "added"
        assert store.recall("crash test item12")
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["plaintext", "encrypted"])
def test_sigkill_during_imports_leaves_each_import_whole_or_absent(tmp_path, mode):
    path = tmp_path / "memory.db"
    lines = _run_and_kill(IMPORTS, path, mode, lines_wanted=15)
    reported = len(lines)

    store = _reopen(path, mode)
    try:
        assert store.integrity_check() == "ok"
        imported = [f for f in store.facts(limit=100_000) if f.source is FactSource.IMPORT]
        assert len(imported) % 40 == 0, "an import was cut in half"
        # Every reported import is there; at most the one in flight committed unreported.
        assert reported * 40 <= len(imported) <= (reported + 1) * 40
    finally:
        store.close()
