"""`chamberlain erase-data`: what removing the package leaves (the data folder, the start-at-login
entry), gone on the person's explicit word, and nothing else — never a folder that is not ours."""

from __future__ import annotations

import json
import os
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


# --- onnxruntime's telemetry folder --------------------------------------------------------------
# onnxruntime 1.31.1 (the OCR engine) wrote a device id and queued usage events under the user's
# cache folder until Chamberlain turned its telemetry off (tools/telemetry.py). The files here are
# made by hand with the names it uses; tests/tools/test_telemetry.py shows it writing them for real.

ORT = Path("Microsoft", "DeveloperTools", ".onnxruntime")


def ort_leftovers(cache: Path) -> Path:
    folder = cache / ORT
    folder.mkdir(parents=True)
    (folder / "deviceid").write_text("24c767b2-3560-6cbd-fd83-5b9a19ff1f81")
    (folder / "onnxruntime.db").write_bytes(b"SQLite format 3\x00")
    return folder


def test_the_ocr_engines_telemetry_folder_goes_on_a_yes_and_no_other_microsoft_file(user):
    home = used(user)
    folder = ort_leftovers(user / ".cache")
    other_tool = user / ".cache" / "Microsoft" / "DeveloperTools" / "other-tool" / "state.json"
    other_tool.parent.mkdir()
    other_tool.write_text("{}")
    assert run_cli(user, "erase-data").returncode == 2  # no one to say yes
    assert (folder / "deviceid").exists()

    done = run_cli(user, "erase-data", "--yes", "--json")

    assert done.returncode == 0, done.stderr
    removed = json.loads(done.stdout)["removed"]
    assert str(home) in removed
    assert [item for item in removed if str(folder) in item] == [
        f"the OCR engine's telemetry folder {folder} (the device id and usage events onnxruntime "
        "wrote before Chamberlain turned its telemetry off)"
    ]
    assert not os.path.lexists(folder)
    assert other_tool.read_text() == "{}"


def test_both_cache_folders_are_cleared_and_the_empty_microsoft_folders_go_with_them(user):
    used(user)
    xdg = user / "xdg-cache"
    folders = [ort_leftovers(user / ".cache"), ort_leftovers(xdg)]

    done = run_cli(user, "erase-data", "--yes", env={"XDG_CACHE_HOME": str(xdg)})

    assert done.returncode == 0, done.stderr
    for folder in folders:
        assert str(folder) in done.stdout
    assert not (user / ".cache" / "Microsoft").exists()
    assert not (xdg / "Microsoft").exists()
    assert (user / ".cache").is_dir()
    assert xdg.is_dir()


def test_a_link_in_its_place_is_removed_but_never_what_it_points_to(user):
    used(user)
    link = user / ".cache" / ORT
    link.parent.mkdir(parents=True)
    link.symlink_to(user / "Documents")

    done = run_cli(user, "erase-data", "--yes")

    assert done.returncode == 0, done.stderr
    assert not os.path.lexists(link)
    assert (user / "Documents" / "thesis.txt").read_text() == "mine\n"


def test_with_no_data_folder_left_the_telemetry_folder_is_still_erased(user):
    folder = ort_leftovers(user / ".cache")

    done = run_cli(user, "erase-data", "--yes")

    assert done.returncode == 0, done.stderr
    assert "Nothing to erase" not in done.stdout
    assert str(folder) in done.stdout
    assert not folder.exists()
