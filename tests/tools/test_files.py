"""tools/files.py: file_list, file_read, file_search on real files, folders and symlinks."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tools.files import FILE_TOOLS, make_file_tools
from tools.manual import Capability, Tool, ToolError, ToolRefused
from tools.private import private_places

KiB = 1024
needs_non_root = pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="root reads every file regardless of its mode, so 'permission denied' cannot happen",
)


def tools_for(home: Path, **kwargs: Any) -> dict[str, Tool]:
    return {tool.name: tool for tool in make_file_tools(home=home, **kwargs)}


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path.resolve()


@pytest.fixture
def tools(base: Path) -> dict[str, Tool]:
    return tools_for(base)


def call(tool: Tool, **args: Any) -> Any:
    """Run a tool the way the runner does: targets first, then run."""
    tool.targets(args)
    result = tool.run(args)
    json.dumps(result.data)  # the model gets this as JSON
    return result


# --- manuals -------------------------------------------------------------------------------------


def test_the_three_tools_are_safe_read_only_file_reads() -> None:
    assert [t.name for t in FILE_TOOLS] == ["file_list", "file_read", "file_search"]
    for tool in FILE_TOOLS:
        manual = tool.manual
        assert manual.capability is Capability.FILE_READ
        assert (manual.category, manual.risk, manual.mutating) == ("files", "safe", False)
        schema = manual.parameters
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        for name in schema["required"]:
            assert schema["properties"][name]["maxLength"] > 0


def test_max_bytes_can_never_exceed_the_configured_cap(base: Path) -> None:
    tool = tools_for(base, read_cap=1000)["file_read"]
    assert tool.manual.parameters["properties"]["max_bytes"]["maximum"] == 1000
    (base / "a.txt").write_text("x" * 5000)
    with pytest.raises(ToolError, match="max_bytes: Input should be less than or equal to 1000"):
        tool.run({"path": str(base / "a.txt"), "max_bytes": 2000})
    assert len(tool.run({"path": str(base / "a.txt")}).data["content"]) == 1000


# --- targets -------------------------------------------------------------------------------------


def test_targets_resolve_dotdot_symlinks_and_tilde(base: Path, tools: dict[str, Tool]) -> None:
    (base / "docs" / "sub").mkdir(parents=True)
    (base / "secret").mkdir()
    (base / "docs" / "sneaky").symlink_to(base / "secret")
    read, listing, search = tools["file_read"], tools["file_list"], tools["file_search"]
    assert read.targets({"path": str(base / "docs/sub/../../secret/k")}) == [
        str(base / "secret" / "k")
    ]
    assert listing.targets({"path": "~/docs/sneaky"}) == [str(base / "secret")]
    assert search.targets({"root": ' "~/docs/sub" '}) == [str(base / "docs" / "sub")]


def test_targets_refuse_a_nul_byte(tools: dict[str, Tool]) -> None:
    with pytest.raises(ToolError, match="NUL byte"):
        tools["file_read"].targets({"path": "~/a\x00b"})


def test_run_reads_what_targets_checked_even_if_the_link_moves(
    base: Path, tools: dict[str, Tool]
) -> None:
    (base / "docs").mkdir()
    (base / "docs" / "mine.txt").write_text("my notes")
    (base / "outside.txt").write_text("not for you")
    link = base / "docs" / "link.txt"
    link.symlink_to(base / "docs" / "mine.txt")
    args = {"path": str(link)}
    prepared = tools["file_read"].prepare(args)
    assert prepared.targets == (str(base / "docs" / "mine.txt"),)

    link.unlink()
    link.symlink_to(base / "outside.txt")  # swapped while the user looked at the dialog
    assert tools["file_read"].execute(prepared).data["content"] == "my notes"


def test_run_refuses_when_a_checked_folder_became_a_symlink(
    base: Path, tools: dict[str, Tool]
) -> None:
    (base / "docs" / "sub").mkdir(parents=True)
    (base / "docs" / "sub" / "a.txt").write_text("inside")
    (base / "elsewhere").mkdir()
    (base / "elsewhere" / "a.txt").write_text("outside")
    args = {"path": str(base / "docs" / "sub" / "a.txt")}
    prepared = tools["file_read"].prepare(args)

    (base / "docs" / "sub").rename(base / "docs" / "old")
    (base / "docs" / "sub").symlink_to(base / "elsewhere")
    with pytest.raises(ToolError, match="changed while it was being opened"):
        tools["file_read"].execute(prepared)


# --- file_list -----------------------------------------------------------------------------------


def test_listing_puts_folders_first_then_names_case_insensitively(
    base: Path, tools: dict[str, Tool]
) -> None:
    for name in ("zdir", "Cdir", "a_dir"):
        (base / name).mkdir()
    (base / "b.txt").write_bytes(b"x" * 1536)
    (base / "A.txt").write_text("")
    (base / "link").symlink_to("b.txt")
    os.mkfifo(base / "pipe")

    result = call(tools["file_list"], path=str(base))
    entries = result.data["entries"]
    assert [e["name"] for e in entries] == [
        "a_dir", "Cdir", "zdir", "A.txt", "b.txt", "link", "pipe",
    ]  # fmt: skip
    kinds = {e["name"]: e["type"] for e in entries}
    assert kinds == {
        "a_dir": "dir", "Cdir": "dir", "zdir": "dir", "A.txt": "file", "b.txt": "file",
        "link": "symlink", "pipe": "other",
    }  # fmt: skip
    b = next(e for e in entries if e["name"] == "b.txt")
    assert b["size"] == 1536
    assert datetime.fromisoformat(b["modified"]).tzinfo is not None
    assert next(e for e in entries if e["name"] == "link")["link_target"] == "b.txt"
    assert not result.truncated

    text = result.text
    assert "3 folders, 2 files, 1 symlink, 1 other entry" in text.splitlines()[0]
    assert "1.5 KiB" in text
    assert "a_dir/" in text
    assert "link -> b.txt" in text
    assert text.index("zdir/") < text.index("A.txt")


def test_hidden_entries_are_skipped_and_counted_unless_asked_for(
    base: Path, tools: dict[str, Tool]
) -> None:
    (base / ".config").mkdir()
    (base / ".secret").write_text("s")
    (base / "visible.txt").write_text("v")

    hidden = call(tools["file_list"], path=str(base))
    assert [e["name"] for e in hidden.data["entries"]] == ["visible.txt"]
    assert hidden.data["hidden_skipped"] == 2
    assert "2 hidden entries not shown" in hidden.text

    shown = call(tools["file_list"], path=str(base), show_hidden=True)
    assert [e["name"] for e in shown.data["entries"]] == [".config", ".secret", "visible.txt"]
    assert shown.data["hidden_skipped"] == 0


def test_a_long_listing_is_truncated_and_says_so(base: Path, tools: dict[str, Tool]) -> None:
    for i in range(10):
        (base / f"f{i:02d}.txt").write_text("x")
    result = call(tools["file_list"], path=str(base), max_entries=3)
    assert [e["name"] for e in result.data["entries"]] == ["f00.txt", "f01.txt", "f02.txt"]
    assert (result.data["total"], result.data["shown"]) == (10, 3)
    assert result.truncated
    assert result.data["truncated"]
    assert "7 more not shown" in result.text


def test_listing_an_empty_folder(base: Path, tools: dict[str, Tool]) -> None:
    (base / "empty").mkdir()
    result = call(tools["file_list"], path=str(base / "empty"))
    assert result.data["entries"] == []
    assert "empty" in result.text.splitlines()[0]


def test_listing_errors_say_what_happened(base: Path, tools: dict[str, Tool]) -> None:
    (base / "a.txt").write_text("x")
    with pytest.raises(ToolError, match=r"/nope does not exist$"):
        call(tools["file_list"], path=str(base / "nope"))
    with pytest.raises(ToolError, match=r"is not a folder .*use file_read"):
        call(tools["file_list"], path=str(base / "a.txt"))
    with pytest.raises(ToolError, match="does not exist"):
        call(tools["file_list"], path=str(base / "a.txt" / "sub"))


@needs_non_root
def test_listing_a_folder_without_permission(base: Path, tools: dict[str, Tool]) -> None:
    locked = base / "locked"
    locked.mkdir(mode=0o000)
    try:
        with pytest.raises(ToolError, match="Permission denied"):
            call(tools["file_list"], path=str(locked))
    finally:
        locked.chmod(0o700)


# --- file_read -----------------------------------------------------------------------------------

FRENCH = (
    "Le café était très crémeux, et la crème brûlée à côté était délicieuse.\n"
    "Où est la boîte à lettres ? Ça dépend de l'été, dit le garçon.\n"
)
RUSSIAN = "Привет, как дела? Съешь же ещё этих мягких французских булок, да выпей чаю.\n"


@pytest.mark.parametrize(
    ("raw", "expected", "encoding"),
    [
        ("naïve café ✓ 日本\n".encode(), "naïve café ✓ 日本\n", "utf-8"),
        (b"\xef\xbb\xbfwith a BOM\n", "with a BOM\n", "utf-8-sig"),
        (FRENCH.encode("utf-16"), FRENCH, "utf-16"),
        (b"\xfe\xff" + FRENCH.encode("utf-16-be"), FRENCH, "utf-16"),
        (FRENCH.encode("latin-1"), FRENCH, None),
        (RUSSIAN.encode("cp1251"), RUSSIAN, "cp1251"),
        (b"", "", "utf-8"),
    ],
    ids=["utf8", "utf8-bom", "utf16-le-bom", "utf16-be-bom", "latin1", "cp1251", "empty"],
)
def test_reading_text_in_its_encoding(
    base: Path, tools: dict[str, Tool], raw: bytes, expected: str, encoding: str | None
) -> None:
    (base / "t.txt").write_bytes(raw)
    result = call(tools["file_read"], path=str(base / "t.txt"))
    assert result.data["content"] == expected
    if encoding is not None:
        assert result.data["encoding"] == encoding
    assert result.data["size"] == len(raw)
    assert not result.truncated
    assert expected in result.text


@pytest.mark.parametrize(
    "raw",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        bytes(b % 255 + 1 for b in os.urandom(4000)) + b"\xff\xfe\xfd\x80\x81",
    ],
    ids=["with-nul-bytes", "undecodable"],
)
def test_a_binary_file_is_refused_clearly(base: Path, tools: dict[str, Tool], raw: bytes) -> None:
    (base / "image.png").write_bytes(raw)
    expected = (
        f"{base / 'image.png'} looks like a binary file ({len(raw):,} bytes); "
        "Chamberlain reads text files only"
    )
    with pytest.raises(ToolError) as info:
        call(tools["file_read"], path=str(base / "image.png"))
    assert str(info.value) == expected


def test_a_huge_file_is_cut_without_being_read_whole(base: Path, tools: dict[str, Tool]) -> None:
    """A 5 GiB (sparse) file: reading it whole would take seconds and gigabytes."""
    big = base / "big.log"
    with big.open("wb") as f:
        f.write(b"log line\n" * (300 * KiB // 9))
        f.truncate(5 * 1024**3)
    result = call(tools["file_read"], path=str(big))
    assert result.truncated
    assert result.data["truncated"]
    assert result.data["size"] == 5 * 1024**3
    assert result.data["bytes_read"] == 256 * KiB
    assert len(result.data["content"]) == 256 * KiB
    assert result.data["content"].startswith("log line\nlog line\n")
    assert "truncated: showing the first 256.0 KiB of 5.0 GiB" in result.text


def test_max_bytes_lowers_the_cut_and_never_splits_a_character(
    base: Path, tools: dict[str, Tool]
) -> None:
    (base / "e.txt").write_text("é" * 100, encoding="utf-8")  # 200 bytes
    result = call(tools["file_read"], path=str(base / "e.txt"), max_bytes=11)
    assert result.data["content"] == "é" * 5  # the 6th "é" was cut in half: dropped
    assert result.truncated
    exact = call(tools["file_read"], path=str(base / "e.txt"), max_bytes=200)
    assert exact.data["content"] == "é" * 100
    assert not exact.truncated


def test_reading_errors_say_what_happened(base: Path, tools: dict[str, Tool]) -> None:
    (base / "folder").mkdir()
    os.mkfifo(base / "pipe")
    with pytest.raises(ToolError, match="does not exist"):
        call(tools["file_read"], path=str(base / "missing.txt"))
    with pytest.raises(ToolError, match="is a folder; use file_list"):
        call(tools["file_read"], path=str(base / "folder"))
    # A FIFO with no writer would block a plain open forever.
    with pytest.raises(ToolError, match="is a named pipe, not a regular file"):
        call(tools["file_read"], path=str(base / "pipe"))


@needs_non_root
def test_reading_a_file_without_permission(base: Path, tools: dict[str, Tool]) -> None:
    (base / "locked.txt").write_text("x")
    (base / "locked.txt").chmod(0o000)
    with pytest.raises(ToolError, match="Permission denied"):
        call(tools["file_read"], path=str(base / "locked.txt"))


def test_reading_through_a_symlink_reads_its_target(base: Path, tools: dict[str, Tool]) -> None:
    (base / "real.txt").write_text("the real one")
    (base / "alias.txt").symlink_to("real.txt")
    result = call(tools["file_read"], path="~/alias.txt")
    assert result.data["path"] == str(base / "real.txt")
    assert result.data["content"] == "the real one"


# --- file_search ---------------------------------------------------------------------------------


def hits(result: Any, root: Path) -> list[str]:
    return [os.path.relpath(h["path"], root) for h in result.data["hits"]]


@pytest.fixture
def project(base: Path) -> Path:
    root = base / "project"
    (root / "docs" / "old").mkdir(parents=True)
    (root / "src").mkdir()
    (root / ".git").mkdir()
    (root / "README.TXT").write_text("Project readme\n")
    (root / "docs" / "notes.txt").write_text("line one\nline two\nThe Invoice Number is 42\n")
    (root / "docs" / "old" / "draft.txt").write_text("an old INVOICE number\n")
    (root / "docs" / "image.bin").write_bytes(b"\x00\x01invoice number\x00\xff")
    (root / "src" / "main.py").write_text("print('hello')\n")
    (root / ".git" / "config.txt").write_text("invoice number in a hidden folder\n")
    return root


def test_search_by_glob_is_case_insensitive_and_finds_folders(
    project: Path, tools: dict[str, Tool]
) -> None:
    result = call(tools["file_search"], root=str(project), name_glob="*.txt")
    assert hits(result, project) == ["README.TXT", "docs/notes.txt", "docs/old/draft.txt"]
    assert result.data["hidden_skipped"] == 1
    assert result.data["hits"][0]["size"] == len("Project readme\n")
    folders = call(tools["file_search"], root=str(project), name_glob="OLD")
    assert folders.data["hits"] == [
        {"path": str(project / "docs" / "old"), "type": "dir", "size": None}
    ]
    assert "docs/old/" in folders.text


def test_a_listing_and_a_search_say_what_they_listed_as_paths_in_the_order_shown(
    project: Path, tools: dict[str, Tool]
) -> None:
    """What a follow-up's "the second one" points at: the entries as shown, folders first."""
    listing = call(tools["file_list"], path=str(project))
    assert listing.listed == tuple(str(project / name) for name in ("docs", "src", "README.TXT"))
    found = call(tools["file_search"], root=str(project), name_glob="*.txt")
    assert found.listed == tuple(h["path"] for h in found.data["hits"])
    assert found.listed[1] == str(project / "docs" / "notes.txt")


def test_search_by_content_gives_line_and_snippet_and_skips_binaries(
    project: Path, tools: dict[str, Tool]
) -> None:
    result = call(tools["file_search"], root=str(project), content="invoice NUMBER")
    assert hits(result, project) == ["docs/notes.txt", "docs/old/draft.txt"]
    first = result.data["hits"][0]
    assert (first["line"], first["snippet"]) == (3, "The Invoice Number is 42")
    assert result.data["content_skipped_binary"] == 1
    assert "docs/notes.txt:3: The Invoice Number is 42" in result.text

    both = call(tools["file_search"], root=str(project), name_glob="draft*", content="invoice")
    assert hits(both, project) == ["docs/old/draft.txt"]

    hidden_too = call(tools["file_search"], root=str(project), content="invoice", show_hidden=True)
    assert ".git/config.txt" in hits(hidden_too, project)


def test_content_search_reads_other_encodings(base: Path, tools: dict[str, Tool]) -> None:
    (base / "fr.txt").write_bytes(FRENCH.encode("latin-1"))
    (base / "u16.txt").write_bytes(FRENCH.encode("utf-16"))
    result = call(tools["file_search"], root=str(base), content="CRÈME BRÛLÉE")
    assert hits(result, base) == ["fr.txt", "u16.txt"]


def test_snippets_are_short_and_show_the_match(base: Path, tools: dict[str, Tool]) -> None:
    (base / "long.txt").write_text("a" * 5000 + " needle here " + "b" * 5000 + "\n")
    result = call(tools["file_search"], root=str(base), content="needle")
    snippet = result.data["hits"][0]["snippet"]
    assert len(snippet) <= 200
    assert "needle here" in snippet


def test_search_never_follows_a_symlink_out_of_the_root(base: Path, tools: dict[str, Tool]) -> None:
    root, outside = base / "root", base / "outside"
    (root / "inner").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("password = hunter2\n")
    (root / "inner" / "mine.txt").write_text("password = mine\n")
    (root / "out_dir").symlink_to(outside)
    (root / "out_file.txt").symlink_to(outside / "secret.txt")
    (root / "inner_link").symlink_to(root / "inner")  # inside: reported, not walked into
    (root / "alias.txt").symlink_to(root / "inner" / "mine.txt")

    result = call(tools["file_search"], root=str(root), content="password")
    assert hits(result, root) == ["alias.txt", "inner/mine.txt"]
    assert result.data["hits"][0]["link_target"] == str(root / "inner" / "mine.txt")
    assert result.data["symlink_escapes_skipped"] == 2
    assert "hunter2" not in json.dumps(result.data)
    assert "skipped 2 symlinks leading outside" in result.text

    names = call(tools["file_search"], root=str(root), name_glob="*")
    assert hits(names, root) == ["alias.txt", "inner", "inner_link", "inner/mine.txt"]


def test_a_folder_swapped_for_a_symlink_mid_search_is_not_entered(base: Path) -> None:
    """The clock is consulted before each entry; it doubles as the hook that swaps the folder."""
    root, outside = base / "root", base / "outside"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "mine.txt").write_text("mine")
    (outside / "b").mkdir(parents=True)
    (outside / "b" / "secret.txt").write_text("secret")
    calls = 0

    def clock() -> float:
        nonlocal calls
        calls += 1
        if calls == 3:  # root/a has been listed and root/a/b queued: now swap root/a
            (root / "a").rename(root / "a_old")
            (root / "a").symlink_to(outside)
        return 0.0

    search = tools_for(base, clock=clock)["file_search"]
    result = call(search, root=str(root), name_glob="*")
    assert hits(result, root) == ["a", "a/b"]
    assert result.data["dirs_unreadable"] == 1
    assert "secret" not in json.dumps(result.data)


def test_results_are_capped_and_the_cap_is_marked_truthfully(
    base: Path, tools: dict[str, Tool]
) -> None:
    for i in range(30):
        (base / f"m{i:02d}.txt").write_text("match\n")
    capped = call(tools["file_search"], root=str(base), name_glob="*.txt", max_results=5)
    assert hits(capped, base) == [f"m{i:02d}.txt" for i in range(5)]
    assert capped.truncated
    assert "reached 5 results" in capped.data["stopped_because"]
    exact = call(tools["file_search"], root=str(base), name_glob="*.txt", max_results=30)
    assert len(exact.data["hits"]) == 30
    assert not exact.truncated


def test_the_walk_is_bounded_by_entries_and_by_time(base: Path) -> None:
    for i in range(50):
        (base / f"f{i:02d}.txt").write_text("x")
    by_count = tools_for(base, search_max_entries=10)["file_search"]
    result = call(by_count, root=str(base), name_glob="*")
    assert result.data["entries_scanned"] == 10
    assert len(result.data["hits"]) == 10
    assert result.truncated
    assert "looked at 10 entries" in result.text

    ticks = iter(range(1000))
    by_time = tools_for(base, search_time_limit_s=5, clock=lambda: float(next(ticks)))
    slow = call(by_time["file_search"], root=str(base), name_glob="*")
    assert slow.truncated
    assert slow.data["stopped_because"] == "ran out of time"
    assert slow.data["entries_scanned"] < 50


def test_large_files_are_not_content_searched(base: Path) -> None:
    (base / "small.txt").write_text("needle\n")
    (base / "large.txt").write_text("needle\n" + "x" * 5000)
    search = tools_for(base, search_content_limit=1000)["file_search"]
    result = call(search, root=str(base), content="needle")
    assert hits(result, base) == ["small.txt"]
    assert result.data["content_skipped_large"] == 1
    assert "1 file too large to search" in result.text


def test_a_tree_deeper_than_the_recursion_limit(base: Path, tools: dict[str, Tool]) -> None:
    depth = sys.getrecursionlimit() + 50
    levels = [str(base)]
    try:
        for _ in range(depth):  # pathlib's mkdir(parents=True) would itself recurse too deep
            levels.append(os.path.join(levels[-1], "d"))
            os.mkdir(levels[-1])
        Path(levels[-1], "needle.txt").write_text("found\n")
        result = call(tools["file_search"], root=str(base), name_glob="needle.txt")
        assert hits(result, base) == [os.path.join(*["d"] * depth, "needle.txt")]
    finally:
        # pytest's clean-up (shutil.rmtree) recurses per level: take the tree down here.
        Path(levels[-1], "needle.txt").unlink(missing_ok=True)
        for level in reversed(levels[1:]):
            os.rmdir(level)


@needs_non_root
def test_unreadable_folders_are_skipped_and_counted(base: Path, tools: dict[str, Tool]) -> None:
    (base / "locked").mkdir()
    (base / "locked" / "a.txt").write_text("x")
    (base / "open").mkdir()
    (base / "open" / "b.txt").write_text("x")
    (base / "locked").chmod(0o000)
    try:
        result = call(tools["file_search"], root=str(base), name_glob="*.txt")
    finally:
        (base / "locked").chmod(0o700)
    assert hits(result, base) == ["open/b.txt"]
    assert result.data["dirs_unreadable"] == 1
    assert "1 folder could not be read" in result.text


def test_search_errors_say_what_happened(base: Path, tools: dict[str, Tool]) -> None:
    (base / "a.txt").write_text("x")
    with pytest.raises(ToolError, match="does not exist"):
        call(tools["file_search"], root=str(base / "nope"), name_glob="*")
    with pytest.raises(ToolError, match="is not a folder"):
        call(tools["file_search"], root=str(base / "a.txt"), name_glob="*")


# --- private places ------------------------------------------------------------------------------


@pytest.fixture
def private_home(base: Path) -> Path:
    """A home with a key in ~/.ssh, a GitHub token under ~/.config, and a Chamberlain folder."""
    (base / ".ssh").mkdir()
    (base / ".ssh" / "id_ed25519").write_text("BEGIN OPENSSH ssh-secret\n")
    (base / ".config" / "gh").mkdir(parents=True)
    (base / ".config" / "gh" / "hosts.yml").write_text("oauth_token: gh-secret\n")
    (base / ".config" / "editor.toml").write_text("theme = 'dark'\n")
    (base / "chamberlain").mkdir()
    (base / "chamberlain" / "token.key").write_text("app-secret\n")
    (base / "notes.txt").write_text("an ordinary note\n")
    return base


def guarded(base: Path, **kwargs: Any) -> dict[str, Tool]:
    return tools_for(base, private=private_places(base, [base / "chamberlain"]), **kwargs)


@pytest.mark.parametrize(
    ("tool", "key", "raw"),
    [
        ("file_read", "path", "~/.ssh/id_ed25519"),
        ("file_read", "path", "~/notes.txt/../.ssh/id_ed25519"),
        ("file_read", "path", "~/.config/gh/hosts.yml"),
        ("file_read", "path", "/etc/shadow"),
        ("file_list", "path", "~/.ssh"),
        ("file_search", "root", "~/.config/gh"),
    ],
)
def test_by_default_the_credential_stores_of_the_home_are_refused_before_anything_opens(
    private_home: Path, tool: str, key: str, raw: str
) -> None:
    files = tools_for(private_home)  # no `private` given: the home's credentials
    with pytest.raises(ToolRefused, match=r"holds credentials or private data; .* never read it"):
        files[tool].targets({key: raw})
    with pytest.raises(ToolRefused):  # a run without targets() is refused just the same
        files[tool].run({key: raw})


def test_chamberlains_own_folder_is_refused_by_path_and_by_any_other_name(
    private_home: Path,
) -> None:
    files = guarded(private_home)
    app = private_home / "chamberlain"
    (private_home / "docs").mkdir()
    (private_home / "docs" / "app").symlink_to(app)
    os.link(app / "token.key", private_home / "docs" / "copy.key")
    for raw in ("~/chamberlain/token.key", "~/docs/app/token.key", "~/docs/copy.key"):
        with pytest.raises(ToolRefused, match="Chamberlain's own files"):
            files["file_read"].targets({"path": raw})
    with pytest.raises(ToolRefused, match="hard link"):
        files["file_read"].targets({"path": "~/docs/copy.key"})
    with pytest.raises(ToolRefused):
        files["file_list"].targets({"path": "~/docs/app"})


def test_a_file_that_becomes_a_hard_link_to_chamberlains_key_after_the_check_is_not_read(
    private_home: Path,
) -> None:
    files = guarded(private_home)
    args = {"path": str(private_home / "notes.txt")}
    files["file_read"].targets(args)
    (private_home / "notes.txt").unlink()
    os.link(private_home / "chamberlain" / "token.key", private_home / "notes.txt")
    with pytest.raises(ToolRefused, match="hard link"):
        files["file_read"].run(args)


def test_a_listing_leaves_private_entries_out_and_says_how_many_hidden_or_not(
    private_home: Path,
) -> None:
    files = guarded(private_home)
    plain = call(files["file_list"], path=str(private_home))
    assert [e["name"] for e in plain.data["entries"]] == ["notes.txt"]
    assert plain.data["hidden_skipped"] == 1  # .config; .ssh is counted as private
    assert plain.data["private_withheld"] == 2
    assert "2 private entries not shown (credentials, Chamberlain's own files)" in plain.text

    everything = call(files["file_list"], path=str(private_home), show_hidden=True)
    assert [e["name"] for e in everything.data["entries"]] == [".config", "notes.txt"]
    assert everything.data["private_withheld"] == 2

    config = call(files["file_list"], path=str(private_home / ".config"))
    assert [e["name"] for e in config.data["entries"]] == ["editor.toml"]
    assert config.data["private_kinds"] == ["credentials"]
    assert "1 private entry not shown (credentials)" in config.text


def test_a_listing_leaves_out_links_into_private_places_and_hard_links_to_chamberlains_files(
    private_home: Path,
) -> None:
    files = guarded(private_home)
    docs = private_home / "docs"
    docs.mkdir()
    (docs / "key").symlink_to(private_home / ".ssh" / "id_ed25519")
    (docs / "ssh").symlink_to(private_home / ".ssh")
    os.link(private_home / "chamberlain" / "token.key", docs / "copy.key")
    (docs / "readme.txt").symlink_to(private_home / "notes.txt")
    result = call(files["file_list"], path=str(docs))
    assert [e["name"] for e in result.data["entries"]] == ["readme.txt"]
    assert result.data["private_withheld"] == 3
    assert "id_ed25519" not in json.dumps(result.data)


def test_a_search_never_enters_or_names_a_private_place(private_home: Path) -> None:
    files = guarded(private_home)
    docs = private_home / "docs"
    docs.mkdir()
    (docs / "ssh").symlink_to(private_home / ".ssh")
    (docs / "key.txt").symlink_to(private_home / ".ssh" / "id_ed25519")
    os.link(private_home / "chamberlain" / "token.key", docs / "copy.key")

    names = call(files["file_search"], root=str(private_home), name_glob="*", show_hidden=True)
    assert sorted(hits(names, private_home)) == [
        ".config", ".config/editor.toml", "docs", "notes.txt",
    ]  # fmt: skip
    assert names.data["private_withheld"] == 6  # .ssh, chamberlain, gh, and three in docs
    assert "6 private entries not shown (credentials, Chamberlain's own files)" in names.text

    for needle in ("BEGIN OPENSSH", "secret", "oauth_token"):
        found = call(files["file_search"], root=str(private_home), content=needle, show_hidden=True)
        assert found.data["hits"] == []
        assert "-secret" not in json.dumps(found.data)
    ordinary = call(files["file_search"], root=str(private_home), content="ordinary")
    assert hits(ordinary, private_home) == ["notes.txt"]


# --- names that are not UTF-8, or that hide characters -------------------------------------------

# File names as a real folder holds them: bytes, not all of them UTF-8 or harmless on a terminal.
ODD_NAMES = {
    b"report\xff.txt": "report\\xff.txt",  # Latin-1 from an old archive
    b"\x1b]0;pwned\x07\x1b[2Jtitle.txt": "\\x1b]0;pwned\\x07\\x1b[2Jtitle.txt",
    "invoice\u202etxt.exe".encode(): "invoice\\u202etxt.exe",
}


@pytest.fixture
def odd_folder(base: Path) -> Path:
    folder = base / "odd"
    folder.mkdir()
    for raw in ODD_NAMES:
        with open(os.path.join(os.fsencode(folder), raw), "wb") as out:
            out.write(b"contents of " + raw.replace(b"\x1b", b"ESC") + b"\n")
    return folder


def as_the_model_gets_it(result: Any) -> bytes:
    """The result as a model request carries it: JSON in UTF-8 (lone surrogates cannot be)."""
    return json.dumps(result.data, ensure_ascii=False).encode("utf-8")


def test_a_listing_shows_odd_names_escaped_and_encodes_for_the_model(
    odd_folder: Path, tools: dict[str, Tool]
) -> None:
    result = call(tools["file_list"], path=str(odd_folder))

    assert sorted(e["name"] for e in result.data["entries"]) == sorted(ODD_NAMES.values())
    sent = as_the_model_gets_it(result)
    assert b"\x1b" not in sent
    assert "\u202e".encode() not in sent
    for shown in ODD_NAMES.values():
        assert shown in result.text
    assert "\x1b" not in result.text
    assert "\u202e" not in result.text
    result.text.encode("utf-8")


def test_a_name_shown_escaped_can_be_read_and_listed_by_that_name(
    odd_folder: Path, tools: dict[str, Tool]
) -> None:
    for raw, shown in ODD_NAMES.items():
        result = call(tools["file_read"], path=f"{odd_folder}/{shown}")
        assert result.data["content"].startswith("contents of ")
        assert result.data["path"] == f"{odd_folder}/{shown}"
        as_the_model_gets_it(result)
        assert tools["file_read"].targets({"path": f"{odd_folder}/{shown}"}) == [
            os.fsdecode(os.path.join(os.fsencode(odd_folder), raw))
        ]


def test_a_file_really_named_like_an_escape_is_the_one_read(
    base: Path, tools: dict[str, Tool]
) -> None:
    (base / "report\\xff.txt").write_text("the literal one")
    (base / os.fsdecode(b"report\xff.txt")).write_text("the Latin-1 one")

    result = call(tools["file_read"], path=str(base / "report\\xff.txt"))

    assert result.data["content"] == "the literal one"


def test_a_search_and_its_errors_show_odd_names_escaped(
    odd_folder: Path, tools: dict[str, Tool]
) -> None:
    found = call(tools["file_search"], root=str(odd_folder), content="contents")

    assert sorted(os.path.basename(h["path"]) for h in found.data["hits"]) == sorted(
        ODD_NAMES.values()
    )
    as_the_model_gets_it(found)
    assert "\x1b" not in found.text
    with pytest.raises(ToolError) as caught:
        call(tools["file_list"], path=f"{odd_folder}/report\\xff.txt")
    assert str(caught.value) == (
        f"{odd_folder}/report\\xff.txt is not a folder (it is a file); use file_read to read a file"
    )
