"""The store's fixtures: a manual clock, and a real store on a file in tmp_path (both modes,
where encryption could change the behaviour, or plaintext, for tests that read raw bytes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.clock import ManualClock
from memory.store.facts import MemoryStore
from tests.support.memory_store import START, open_store


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture(params=[False, True], ids=["plaintext", "encrypted"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[MemoryStore]:
    opened = open_store(tmp_path / "memory.db", bool(request.param), clock)
    yield opened
    opened.close()


@pytest.fixture
def plain(tmp_path: Path, clock: ManualClock) -> Iterator[MemoryStore]:
    """A plaintext store, for the tests that read the database file's raw bytes."""
    opened = open_store(tmp_path / "memory.db", False, clock)
    yield opened
    opened.close()
