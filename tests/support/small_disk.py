"""A Chamberlain home on a disk that is full or mounted read-only, for real, in a private mount.

`on_small_disk` starts bubblewrap with the whole file system as it is (`--bind / /`) plus one
tmpfs of a few megabytes over the folder given (`--tmpfs`, `--size`), or that folder bound
read-only (`--ro-bind`): a mount namespace of its own, so nothing of the host is mounted,
filled or changed, and the mount is gone when the last process inside exits. Inside, a small
driver copies a prepared home into the tmpfs, fills it until only `free_kb` is left, and runs
the steps one after the other (commands, or "free" to delete the filler), so a test can see a
command meet a full disk and then see what is left once space is freed. The folder's final
contents are copied out to `out` for the test to read.

Not a fake: the kernel's tmpfs says ENOSPC, and a read-only bind mount says EROFS even to root.
`why_no_small_disk` says why bubblewrap cannot do this here (tests skip with that reason).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# The driver runs inside the mount namespace: copy the seed in, fill, run the steps, copy out.
_DRIVER = r"""
import json, os, shutil, subprocess, sys

spec = json.loads(sys.argv[1])
folder = spec["folder"]
if spec["seed"] is not None:
    shutil.copytree(spec["seed"], folder, dirs_exist_ok=True)
filler = os.path.join(folder, ".filler")
if spec["mode"] == "full":
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\1" * 4096):
            pass
    except OSError:
        pass
    os.close(fd)
    keep = spec["free_kb"] * 1024
    size = os.path.getsize(filler)
    os.truncate(filler, max(0, size - keep))
results = []
for step in spec["steps"]:
    if step == "free":
        os.unlink(filler)
        continue
    proc = subprocess.run(
        step["argv"], env=step["env"], cwd=step["cwd"], capture_output=True, text=True,
        timeout=120,
    )
    st = os.statvfs(folder)
    results.append({
        "returncode": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "free_kb": st.f_bavail * st.f_frsize // 1024,
    })
shutil.copytree(folder, spec["out"], ignore=shutil.ignore_patterns(".filler"))
print(json.dumps(results))
"""


@dataclass(frozen=True)
class Step:
    """One command run inside the mount: argv, its environment and working folder."""

    argv: Sequence[str]
    env: dict[str, str]
    cwd: Path


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str
    # What was left on the small disk after the command.
    free_kb: int


def why_no_small_disk() -> str | None:
    """Why bubblewrap cannot give a private tmpfs here, or None when it can."""
    if not sys.platform.startswith("linux"):
        return "needs Linux mount namespaces (bubblewrap)"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    probe = subprocess.run(
        [bwrap, "--bind", "/", "/", "--size", "65536", "--tmpfs", "/mnt", "--", "true"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if probe.returncode != 0:
        return f"bubblewrap cannot mount a tmpfs here: {probe.stderr.strip()[-200:]}"
    return None


def on_small_disk(
    folder: Path,
    steps: Sequence[Step | Literal["free"]],
    *,
    out: Path,
    seed: Path | None = None,
    mode: Literal["full", "read_only"] = "full",
    free_kb: int = 0,
    size_kb: int = 4096,
) -> list[Ran]:
    """Run `steps` with `folder` on a full tmpfs (`seed` copied in, `free_kb` left free) or
    mounted read-only (its contents as they are); `out` gets the folder's final contents.
    Returns one Ran per command step, in order."""
    bwrap = shutil.which("bwrap") or "bwrap"
    folder.mkdir(parents=True, exist_ok=True)
    if mode == "full":
        mount = ["--size", str(size_kb * 1024), "--tmpfs", str(folder)]
    else:
        mount = ["--ro-bind", str(folder), str(folder)]
    spec = {
        "folder": str(folder),
        "seed": str(seed) if seed is not None else None,
        "mode": mode,
        "free_kb": free_kb,
        "out": str(out),
        "steps": [
            s if s == "free" else {"argv": list(s.argv), "env": s.env, "cwd": str(s.cwd)}
            for s in steps
        ],
    }
    proc = subprocess.run(
        [bwrap, "--bind", "/", "/", *mount, "--", sys.executable, "-c", _DRIVER, json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the small-disk driver failed: {proc.stderr[-2000:]}")
    return [Ran(**r) for r in json.loads(proc.stdout)]
