"""`chamberlain erase-data`: what removing the package leaves (the data folder, the start-at-login
entry), gone on the person's explicit word, and nothing else — never a folder that is not ours."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.autostart import render_entry
from tests.support.cli import run_cli


@pytest.fixture
def user(tmp_path: Path) -> Path:
    path = tmp_path / "user"
    path.mkdir()
    (path / "Documents").mkdir()
    (path / "Documents" / "thesis.txt").write_text("mine\n")
    return path


def used(user: Path) -> Path:
    """A home Chamberlain has really used: a turn ran, so settings, audit and secret exist."""
    done = run_cli(user, "ask", "--llm", "none", "--approve", "system_read=once", "uptime")
    assert done.returncode == 0, done.stderr
    home = user / ".chamberlain"
    assert (home / "audit.jsonl").exists()
    return home


def test_it_asks_for_yes_where_no_one_can_confirm_and_erases_nothing(user):
    home = used(user)
    done = run_cli(user, "erase-data")
    assert done.returncode == 2
    assert "add --yes" in done.stderr
    assert (home / "audit.jsonl").exists()


def test_with_yes_the_data_folder_and_the_autostart_entry_go_and_nothing_else(user):
    home = used(user)
    entry = user / ".config" / "autostart" / "chamberlain.desktop"
    entry.parent.mkdir(parents=True)
    entry.write_text(render_entry(["/usr/bin/chamberlain"]))
    other = entry.parent / "someone-else.desktop"
    other.write_text("[Desktop Entry]\nName=Other\n")

    done = run_cli(user, "erase-data", "--yes", "--json")

    assert done.returncode == 0, done.stderr
    removed = json.loads(done.stdout)["removed"]
    assert str(home) in removed
    assert any("start-at-login entry" in item for item in removed)
    assert not home.exists()
    assert not entry.exists()
    assert other.exists()
    assert (user / "Documents" / "thesis.txt").read_text() == "mine\n"


def test_a_folder_that_is_not_chamberlains_is_never_erased(user):
    done = run_cli(user, "--home", str(user / "Documents"), "erase-data", "--yes")
    assert done.returncode == 2
    assert "does not look like Chamberlain's data folder" in done.stderr
    assert (user / "Documents" / "thesis.txt").exists()


def test_the_users_own_home_is_never_erased_even_holding_our_files(user):
    (user / "settings.json").write_text("{}")
    done = run_cli(user, "--home", str(user), "erase-data", "--yes")
    assert done.returncode == 2
    assert (user / "Documents" / "thesis.txt").exists()


def test_nothing_there_is_nothing_to_erase(user):
    done = run_cli(user, "erase-data", "--yes")
    assert done.returncode == 0
    assert "Nothing to erase" in done.stdout


def test_a_folder_holding_the_users_home_is_never_erased(user):
    (user.parent / "settings.json").write_text("{}")
    done = run_cli(user, "--home", str(user.parent), "erase-data", "--yes")
    assert done.returncode == 2
    assert (user / "Documents" / "thesis.txt").exists()
