"""A person's home for the command rules to resolve `~` and relative paths against."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (home / "notes.txt").write_text("hello notes\n")
    return home.resolve()
