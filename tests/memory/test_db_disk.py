"""The memory database on a disk that is really full: the words a person reads, and nothing lost.

The real CLI, with the Chamberlain home on a tmpfs of a few megabytes filled to its last
kilobytes in a private mount namespace (tests/support/small_disk.py). With a few kilobytes
free SQLite cannot grow its write-ahead log or its index, and reports SQLITE_IOERR rather than
SQLITE_FULL; the person must still read that the disk is full, and find every fact again once
space is freed.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support.cli import cli_env, make_user, run_cli
from tests.support.small_disk import Step, on_small_disk, why_no_small_disk


@pytest.fixture
def small_disk() -> None:
    reason = why_no_small_disk()
    if reason is not None:
        pytest.skip(reason)


def _memory(user: Path, *args: str) -> Step:
    return Step([sys.executable, "-m", "app.cli", "memory", *args], cli_env(user), user)


@pytest.mark.parametrize("free_kb", [0, 24], ids=["full", "24-KB-free"])
def test_a_full_disk_is_called_full_and_every_fact_is_there_once_space_is_freed(
    tmp_path: Path, small_disk: None, free_kb: int
) -> None:
    user = make_user(tmp_path / "user")
    for fact in ("my dog is called Rex", "my sister lives in Lyon"):
        added = run_cli(user, "memory", "add", fact)
        assert added.returncode == 0, added.stderr
    seed = tmp_path / "seed"
    shutil.copytree(user / ".chamberlain", seed)

    add, listing, freed_listing, freed_add = on_small_disk(
        user / ".chamberlain",
        [
            _memory(user, "add", "my cat is called Tom"),
            _memory(user, "list"),
            "free",
            _memory(user, "list"),
            _memory(user, "add", "my cat is called Tom"),
        ],
        out=tmp_path / "after",
        seed=seed,
        free_kb=free_kb,
    )
    for ran in (add, listing):
        assert ran.returncode == 1
        (line,) = ran.stderr.splitlines()
        assert line.startswith("chamberlain: The disk holding ~/.chamberlain is full (")
        assert line.endswith("nothing already saved was lost; free some space, then try again.")
        assert "I/O error" not in line
    assert freed_listing.returncode == 0, freed_listing.stderr
    assert "my dog is called Rex" in freed_listing.stdout
    assert "my sister lives in Lyon" in freed_listing.stdout
    assert "my cat is called Tom" not in freed_listing.stdout
    assert freed_add.returncode == 0, freed_add.stderr
