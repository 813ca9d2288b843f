"""tools/paths.py: a grant for ~/Documents never reaches ~/.ssh through a symlink or `..`.

Real directories and symlinks in tmp_path; the property test compares against the kernel's own
resolution (open the path, read back /proc/self/fd/N), so it needs Linux.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.paths import is_within, path_in_scope, resolve_path

# --- resolve_path --------------------------------------------------------------------------------


def test_relative_paths_are_taken_against_cwd_and_dotdot_is_collapsed(tmp_path: Path) -> None:
    base = tmp_path.resolve()
    (base / "a" / "b").mkdir(parents=True)
    assert resolve_path("a/b/../b/./", cwd=base) == base / "a" / "b"
    assert resolve_path("a/../../x", cwd=base) == base.parent / "x"


def test_tilde_uses_the_injected_home(tmp_path: Path) -> None:
    home = tmp_path.resolve() / "home"
    home.mkdir()
    assert resolve_path("~", home=home) == home
    assert resolve_path("~/Documents/notes.txt", home=home) == home / "Documents" / "notes.txt"
    # Only a leading ~ is special.
    assert resolve_path("x/~", cwd=home) == home / "x" / "~"


def test_surrounding_quotes_and_whitespace_are_stripped(tmp_path: Path) -> None:
    home = tmp_path.resolve()
    expected = home / "My Notes" / "a b.txt"
    for raw in ('  "~/My Notes/a b.txt"  ', "'~/My Notes/a b.txt'", "`~/My Notes/a b.txt`\n"):
        assert resolve_path(raw, home=home) == expected


def test_symlinks_are_resolved_and_missing_tails_kept(tmp_path: Path) -> None:
    base = tmp_path.resolve()
    (base / "real").mkdir()
    (base / "link").symlink_to(base / "real")
    assert resolve_path(str(base / "link" / "not-yet" / "file.txt")) == (
        base / "real" / "not-yet" / "file.txt"
    )


def test_a_dangling_symlink_resolves_to_where_it_would_create(tmp_path: Path) -> None:
    base = tmp_path.resolve()
    (base / "scope").mkdir()
    (base / "scope" / "dangling").symlink_to(base / "outside" / "new.txt")
    assert resolve_path(str(base / "scope" / "dangling")) == base / "outside" / "new.txt"


@pytest.mark.parametrize("raw", ["", "   ", '""', "''", " `` "])
def test_empty_paths_are_refused(raw: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        resolve_path(raw)


@pytest.mark.parametrize(
    "raw", ["S:\\Payroll\\Leavers", "c:/Users/ana", "\\\\fs01\\public\\rota.xlsx"]
)
def test_a_windows_path_is_refused_with_what_to_give_instead(raw: str, tmp_path: Path) -> None:
    """A drive letter or a share names no file here: joined to the working directory it would
    name one nobody meant (and ask leave for it)."""
    with pytest.raises(
        ValueError, match=r"is a Windows path .*where the drive or share is mounted"
    ):
        resolve_path(raw, cwd=tmp_path)


def test_a_posix_name_with_a_colon_or_backslash_is_still_a_file(tmp_path: Path) -> None:
    assert resolve_path("notes:draft.txt", cwd=tmp_path) == tmp_path / "notes:draft.txt"
    assert resolve_path("a\\b.txt", cwd=tmp_path) == tmp_path / "a\\b.txt"


def test_nul_bytes_are_refused() -> None:
    with pytest.raises(ValueError, match="NUL byte"):
        resolve_path("~/Documents/\x00/../.ssh")


def test_overlong_paths_are_refused() -> None:
    with pytest.raises(ValueError, match="longer than"):
        resolve_path("/" + "a/" * 5000)


def test_a_symlink_loop_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    base = tmp_path.resolve()
    (base / "loop").symlink_to(base / "loop")
    (base / "ping").symlink_to(base / "pong")
    (base / "pong").symlink_to(base / "ping")
    for raw in ("loop", "ping/x", "loop/../../etc"):
        with pytest.raises(ValueError, match="symlink loop"):
            resolve_path(raw, cwd=base)


# --- is_within -----------------------------------------------------------------------------------


def test_a_sibling_with_a_longer_name_is_not_within() -> None:
    assert not is_within(Path("/home/a/Documents2"), Path("/home/a/Documents"))
    assert not is_within(Path("/home/a/Documents2/x"), Path("/home/a/Documents"))
    assert is_within(Path("/home/a/Documents/x"), Path("/home/a/Documents"))


def test_a_path_is_within_itself_and_root_contains_everything() -> None:
    assert is_within(Path("/home/a/Documents"), Path("/home/a/Documents"))
    assert is_within(Path("/home/a/Documents"), Path("/"))
    assert is_within(Path("/"), Path("/"))
    assert not is_within(Path("/home/a"), Path("/home/a/Documents"))


def test_unresolved_paths_are_refused_not_guessed() -> None:
    with pytest.raises(ValueError, match="not absolute"):
        is_within(Path("Documents/x"), Path("/home/a/Documents"))
    with pytest.raises(ValueError, match=r"'\.\.'"):
        is_within(Path("/home/a/Documents/../.ssh"), Path("/home/a/Documents"))


@given(
    target=st.lists(st.sampled_from(["a", "b", "ab", "a.b"]), max_size=5),
    prefix=st.lists(st.sampled_from(["a", "b", "ab", "a.b"]), max_size=5),
)
def test_is_within_is_component_prefix(target: list[str], prefix: list[str]) -> None:
    expected = target[: len(prefix)] == prefix
    assert is_within(Path("/", *target), Path("/", *prefix)) is expected


# --- path_in_scope: the guarantee ---------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path.resolve() / "home"
    (home / "Documents" / "work").mkdir(parents=True)
    (home / "Documents2").mkdir()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("secret")
    return home


def test_documents_grant_does_not_reach_ssh(home: Path) -> None:
    (home / "Documents" / "keys").symlink_to(home / ".ssh")
    (home / "Documents" / "work" / "up").symlink_to("../..")
    scope = "~/Documents"
    assert path_in_scope("~/Documents/work/report.txt", scope, home=home)
    assert not path_in_scope("~/Documents/../.ssh/id_rsa", scope, home=home)
    assert not path_in_scope("~/Documents/keys/id_rsa", scope, home=home)
    assert not path_in_scope("~/Documents/work/up/.ssh/id_rsa", scope, home=home)
    assert not path_in_scope("~/Documents2/x", scope, home=home)
    assert not path_in_scope(str(home / ".ssh"), scope, home=home)


def test_a_link_from_outside_into_the_scope_is_in_scope(home: Path) -> None:
    (home / "shortcut").symlink_to(home / "Documents" / "work")
    assert path_in_scope("~/shortcut/report.txt", "~/Documents", home=home)


def test_an_invalid_target_is_in_no_scope_but_an_invalid_scope_is_a_bug(home: Path) -> None:
    assert not path_in_scope("~/Documents/\x00", "~/Documents", home=home)
    assert not path_in_scope("", "~/Documents", home=home)
    with pytest.raises(ValueError, match="NUL"):
        path_in_scope("~/Documents/x", "~/Docu\x00ments", home=home)


# --- property: our resolution is the kernel's ---------------------------------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """home/Documents is the scope; links inside lead in, out, and through chains."""
    home = tmp_path_factory.mktemp("tree").resolve() / "home"
    docs = home / "Documents"
    (docs / "a" / "deep").mkdir(parents=True)
    (docs / "b").mkdir()
    (docs / "a" / "note.txt").write_text("note")
    (home / "Documents2" / "a").mkdir(parents=True)
    (home / ".ssh" / "keys").mkdir(parents=True)
    (home / ".ssh" / "keys" / "id_rsa").write_text("secret")
    (docs / "inner").symlink_to("a")  # inside -> inside
    (docs / "escape").symlink_to("../.ssh")  # inside -> outside
    (docs / "chain1").symlink_to("chain2")  # a chain that ends outside
    (docs / "chain2").symlink_to("../.ssh/keys")
    (docs / "chain_in1").symlink_to("chain_in2")  # a chain that stays inside
    (docs / "chain_in2").symlink_to("a/deep")
    (docs / "abs_escape").symlink_to(home / ".ssh")  # absolute, outside
    (docs / "a" / "up").symlink_to("../..")  # inside, pointing at home
    (home / "back").symlink_to(docs / "a")  # outside -> inside
    return docs


def _kernel_path(path: str) -> Path | None:
    """Where the kernel says `path` leads, or None if it cannot get there."""
    try:
        fd = os.open(path, os.O_PATH)  # follows every symlink, like any open
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    finally:
        os.close(fd)


@st.composite
def walks(draw: st.DrawFn, tree: Path) -> list[str]:
    """A relative path from `tree`: each step is an entry of where the kernel says we are (so
    every symlink gets used), or `..` or `.`; the last may be a name that does not exist yet."""
    base = tree.parent.parent
    parts: list[str] = []
    here: Path | None = tree
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        if here is None or not here.is_dir():
            break
        names = sorted(os.listdir(here)) if is_within(here, base) else []
        parts.append(draw(st.sampled_from([*names, "..", "."])))
        here = _kernel_path(os.path.join(tree, *parts))
    if here is not None and here.is_dir() and draw(st.booleans()):
        parts.append("new.txt")
    return parts


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel oracle reads /proc/self/fd")
@settings(max_examples=500, deadline=None)
@given(data=st.data(), via_home=st.booleans())
def test_resolution_matches_the_kernel_and_scope_is_honest(
    tree: Path, data: st.DataObject, via_home: bool
) -> None:
    parts = data.draw(walks(tree))
    relative = "/".join(parts) or "."
    absolute = os.path.join(tree, relative)
    truth = _kernel_path(absolute)
    if truth is None:
        # A name that does not exist yet, in a folder that does: where it would be created.
        parent = _kernel_path(os.path.dirname(absolute))
        assert parent is not None, relative
        truth = parent / parts[-1]

    home = tree.parent
    if via_home:
        resolved = resolve_path(f"~/Documents/{relative}", home=home)
    else:
        resolved = resolve_path(relative, cwd=tree)

    assert resolved == truth
    assert is_within(resolved, tree) is is_within(truth, tree)
    if is_within(resolved, home / ".ssh"):
        assert not is_within(resolved, tree)


def test_the_tree_really_has_escapes(tree: Path) -> None:
    """Guards the property test: some generated paths must land outside the scope."""
    outside = ["escape/keys/id_rsa", "chain1/id_rsa", "abs_escape", "a/up/.ssh", "../Documents2"]
    for raw in outside:
        assert not is_within(resolve_path(raw, cwd=tree), tree), raw
    for raw in ["inner/note.txt", "chain_in1", "../back/note.txt", "a/up/Documents/b"]:
        assert is_within(resolve_path(raw, cwd=tree), tree), raw
