"""Fixtures every test of the audit log shares: a log path in a scratch home, a clock, a key."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "audit.jsonl"


@pytest.fixture
def key() -> bytes:
    """An install's audit key (the writer signs the head with it)."""
    return bytes(range(32))
