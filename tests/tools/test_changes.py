"""tools/changes.py: where a program that writes wherever it is told may write, and what it will
change, read from its diff or archive before it runs (real files in a temporary folder)."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from tools.changes import archive_members, changes_of, diff_names, strip_components
from tools.paths import resolve_path


def _resolver(cwd: Path):
    def resolve(raw: str) -> Path | None:
        try:
            return resolve_path(raw, home=cwd, cwd=cwd)
        except ValueError:
            return None

    return resolve


GIT_DIFF = """\
diff --git a/src/app.py b/src/app.py
index 1..2 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1 +1 @@
-x
+y
diff --git a/old.txt b/new.txt
similarity index 90%
rename from old.txt
rename to new.txt
--- /dev/null
+++ b/added.txt\t2024-01-01 00:00:00
@@ -0,0 +1 @@
+z
"""


def test_a_diffs_headers_name_every_file_it_touches_old_and_new_sides():
    names = diff_names(GIT_DIFF)
    assert "a/src/app.py" in names
    assert "b/src/app.py" in names
    assert "old.txt" in names
    assert "new.txt" in names
    assert "b/added.txt" in names  # the timestamp after the tab is not part of the name
    assert "/dev/null" not in names


@pytest.mark.parametrize(
    ("name", "strip", "wanted"),
    [
        ("a/src/app.py", 1, "src/app.py"),
        ("a/src/app.py", 0, "a/src/app.py"),
        ("a/src/app.py", None, "app.py"),  # GNU patch without -p: the base name
        ("a/b", 5, None),
        ("/etc/passwd", 0, "/etc/passwd"),
    ],
)
def test_strip_components_is_what_patch_p_does(name, strip, wanted):
    assert strip_components(name, strip) == wanted


def test_a_patch_lists_its_targets_after_p_and_writes_only_its_folder(tmp_path):
    (tmp_path / "fix.diff").write_text(GIT_DIFF)
    found = changes_of("patch", ("-p1", "-i", "fix.diff"), tmp_path, _resolver(tmp_path))
    assert found is not None
    assert found.destinations == (tmp_path,)
    assert found.sources == (tmp_path / "fix.diff",)
    assert tmp_path / "src" / "app.py" in found.files
    assert tmp_path / "added.txt" in found.files
    assert found.known


def test_patch_d_moves_the_destination_and_a_named_file_is_the_only_change(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "fix.diff").write_text(GIT_DIFF)
    found = changes_of(
        "patch", ("-d", "sub", "-p1", "-i", "fix.diff"), tmp_path, _resolver(tmp_path)
    )
    assert found is not None
    assert found.destinations == (tmp_path / "sub",)
    assert tmp_path / "sub" / "src" / "app.py" in found.files
    named = changes_of("patch", ("notes.txt", "fix.diff"), tmp_path, _resolver(tmp_path))
    assert named is not None
    assert named.files == (tmp_path / "notes.txt",)
    assert named.sources == (tmp_path / "fix.diff",)


def test_a_diff_that_is_not_a_regular_file_is_never_read_and_the_changes_are_unknown(tmp_path):
    fifo = tmp_path / "fix.diff"
    os.mkfifo(fifo)
    found = changes_of("patch", ("-p1", "-i", "fix.diff"), tmp_path, _resolver(tmp_path))
    assert found is not None
    assert found.files == ()
    assert not found.known


def test_git_apply_strips_one_component_by_default(tmp_path):
    (tmp_path / "fix.diff").write_text(GIT_DIFF)
    found = changes_of("git", ("apply", "fix.diff"), tmp_path, _resolver(tmp_path))
    assert found is not None
    assert tmp_path / "src" / "app.py" in found.files
    assert changes_of("git", ("status",), tmp_path, _resolver(tmp_path)) is None


def _tar(path: Path, names: list[str]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name in names:
            info = tarfile.TarInfo(name)
            archive.addfile(info, io.BytesIO(b""))


@pytest.mark.parametrize(
    "args",
    [
        ("-xzf", "a.tgz", "-C", "out"),
        ("xf", "a.tgz", "-C", "out"),
        ("--extract", "--file=a.tgz", "--directory=out"),
    ],
)
def test_tar_x_lists_its_members_under_its_destination(tmp_path, args):
    (tmp_path / "out").mkdir()
    _tar(tmp_path / "a.tgz", ["x.txt", "/abs/y.txt", "../z.txt"])
    found = changes_of("tar", args, tmp_path, _resolver(tmp_path))
    assert found is not None
    assert found.destinations == (tmp_path / "out",)
    assert found.sources == (tmp_path / "a.tgz",)
    # A leading / is stripped as tar does; `..` is shown where it really leads.
    assert found.files == (
        tmp_path / "out" / "x.txt",
        tmp_path / "out" / "abs" / "y.txt",
        tmp_path / "z.txt",
    )


def test_tar_c_changes_only_its_archive_file(tmp_path):
    found = changes_of("tar", ("-czf", "backup.tgz", "docs"), tmp_path, _resolver(tmp_path))
    assert found is not None
    assert found.destinations == (tmp_path,)
    assert found.files == (tmp_path / "backup.tgz",)


def test_unzip_lists_its_members_and_unzip_l_changes_nothing(tmp_path):
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as archive:
        archive.writestr("dir/file.txt", "x")
    found = changes_of("unzip", ("a.zip", "-d", "out"), tmp_path, _resolver(tmp_path))
    assert found is not None
    assert found.files == (tmp_path / "out" / "dir" / "file.txt",)
    listing = changes_of("unzip", ("-l", "a.zip"), tmp_path, _resolver(tmp_path))
    assert listing is not None
    assert listing.destinations == ()
    assert archive_members(tmp_path / "a.zip") == ["dir/file.txt"]


def test_cp_writes_only_its_destination(tmp_path):
    (tmp_path / "dest").mkdir()
    found = changes_of("cp", ("-r", "src", "dest"), tmp_path, _resolver(tmp_path))
    assert found is not None
    assert found.destinations == (tmp_path / "dest",)
    assert found.sources == (tmp_path / "src",)
    assert found.files == (tmp_path / "dest" / "src",)
    assert changes_of("touch", ("x",), tmp_path, _resolver(tmp_path)) is None


def test_an_archive_that_unpacks_past_the_cap_is_not_listed_and_nothing_more_is_read(
    tmp_path, monkeypatch
):
    """A small compressed archive can unpack to far more than it weighs: the listing stops at
    the cap and says the changes cannot be known, rather than unpack it all before the prompt."""
    from tools import changes

    monkeypatch.setattr(changes, "MAX_UNPACKED_BYTES", 1024 * 1024)
    bomb = tmp_path / "small.tar.gz"
    with tarfile.open(bomb, "w:gz") as archive:
        for name, size in (("zeros.bin", 4 * 1024 * 1024), ("later.txt", 3)):
            info = tarfile.TarInfo(name)
            info.size = size
            archive.addfile(info, io.BytesIO(b"\0" * size))
    assert bomb.stat().st_size < 64 * 1024

    assert changes.archive_members(bomb) is None
    monkeypatch.setattr(changes, "MAX_UNPACKED_BYTES", 64 * 1024 * 1024)
    assert changes.archive_members(bomb) == ["zeros.bin", "later.txt"]
