"""tools/startup_places.py: which places run code later, and finding them inside a folder a
command may write (real folders in a temporary home)."""

from __future__ import annotations

from tools.startup_places import (
    DESKTOP,
    GIT,
    PYTHON,
    TERMINAL,
    VENV,
    StartupPlace,
    chamberlain_program,
    place_of,
    places_in,
)


def test_the_fixed_places_of_a_home_say_when_they_run(tmp_path):
    home = tmp_path.resolve()
    assert place_of(home / ".bashrc", home) == StartupPlace(home / ".bashrc", TERMINAL)
    assert place_of(home / ".config/autostart/x.desktop", home) == StartupPlace(
        home / ".config/autostart", DESKTOP
    )
    assert place_of(home / "Documents/notes.txt", home) is None


def test_git_folders_pth_files_and_sitecustomize_are_places_wherever_they_are(tmp_path):
    home = tmp_path.resolve()
    repo = home / "src" / "app"
    assert place_of(repo / ".git" / "config", home) == StartupPlace(repo / ".git", GIT)
    assert place_of(repo / "x.pth", home) == StartupPlace(repo / "x.pth", PYTHON)
    site = repo / ".venv/lib/python3.11/site-packages"
    assert place_of(site / "pkg/mod.py", home) == StartupPlace(site, PYTHON)
    assert place_of(chamberlain_program() / "tools" / "system.py", home) is not None


def test_places_in_a_folder_finds_repositories_and_site_folders_but_not_inside_caches(tmp_path):
    home = tmp_path.resolve()
    work = home / "work"
    (work / "app" / ".git").mkdir(parents=True)
    (work / "lib" / "worktree").mkdir(parents=True)
    (work / "lib" / "worktree" / ".git").write_text("gitdir: /elsewhere\n")
    site = work / "app" / ".venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    bare = work / "mirror.git"
    for name in ("objects", "refs"):
        (bare / name).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    (bare / "config").write_text("[core]\n")
    (work / "node_modules" / "pkg" / ".git").mkdir(parents=True)
    venv = work / "tool" / "env"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    found = {p.path for p in places_in(work, home) or []}
    assert found == {work / "app" / ".git", work / "lib" / "worktree" / ".git", site, bare, venv}
    assert place_of(venv / "bin" / "activate", home) == StartupPlace(venv, VENV)


def test_a_folder_too_big_to_search_is_not_promised_clean(tmp_path):
    home = tmp_path.resolve()
    for index in range(5):
        (home / "big" / f"d{index}").mkdir(parents=True)
    assert places_in(home / "big", home, limit=3) is None
    assert places_in(home / "big", home, limit=100) == []


def test_the_homes_own_places_are_found_in_a_writable_home(tmp_path):
    home = tmp_path.resolve()
    found = {p.path: p.when for p in places_in(home, home) or []}
    assert found[home / ".bashrc"] == TERMINAL
    assert found[home / ".config" / "autostart"] == DESKTOP
