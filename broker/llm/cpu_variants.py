"""Which build of llama.cpp's CPU code the embedded model runs, and what this machine taught us.

llama.cpp is installed portable: its CPU backend built once per instruction-set level (SSE4.2,
AVX2, AVX-512, AMX, …), each a library of its own (`libggml-cpu-<level>.so`). The best level a
CPU *reports* is not always one it *runs*: a VM whose CPU lists AMX while its kernel never
enabled the tile state dies with an illegal instruction on the first long prompt. So the worker
(`broker.llm.worker`) loads the level chosen here, probes it with a real prompt, and this module
remembers per machine which level worked and which crashed, so that the next start goes straight
to one that runs.

This module never loads a library: loading one is the worker's job (a level this CPU cannot run
may crash the process that loads it). It only finds the files and keeps the record.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import platform
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("chamberlain.broker.llm")

if sys.platform == "win32":
    _PREFIX, _SUFFIX = "ggml-cpu-", ".dll"
else:
    _PREFIX, _SUFFIX = "libggml-cpu-", ".so"

RECORD_FORMAT = 1
# A record larger than this is not ours (it lists a dozen names at most).
_RECORD_MAX_BYTES = 64 * 1024


def search_folders() -> list[Path]:
    """Where the CPU levels may lie: llama-cpp-python puts them in site-packages/bin (pip) or
    beside its own libraries; the installed bundle keeps them beside its executable. Found
    without importing llama_cpp (that loads the shared library)."""
    folders: list[Path] = []
    try:
        spec = importlib.util.find_spec("llama_cpp")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        package = Path(spec.origin).parent
        folders += [package / "lib", package.parent / "bin"]
    if getattr(sys, "frozen", False):
        folders.append(Path(sys.executable).parent)
        bundled = getattr(sys, "_MEIPASS", None)
        if bundled:
            folders.append(Path(bundled))
    return list(dict.fromkeys(folders))


def variant_files(folders: list[Path] | None = None) -> dict[str, Path]:
    """Every CPU level installed, by name ("haswell", "icelake", …); the first folder wins."""
    found: dict[str, Path] = {}
    for folder in search_folders() if folders is None else folders:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if not (name.startswith(_PREFIX) and name.endswith(_SUFFIX)):
                continue
            level = name[len(_PREFIX) : -len(_SUFFIX)]
            if level and entry.is_file() and level not in found:
                found[level] = entry
    return found


def cpu_signature() -> str:
    """What identifies this machine's processor to llama.cpp: model name and feature flags."""
    text = ""
    with contextlib.suppress(OSError):
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    wanted = []
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip()
        if key in ("vendor_id", "model name", "flags"):
            wanted.append(line.strip())
        elif not line.strip() and wanted:
            break  # the first processor is enough: every core reports the same
    if not wanted:
        wanted = [platform.machine(), platform.processor()]
    return hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:24]


def build_signature(files: dict[str, Path]) -> str:
    """What identifies the installed llama.cpp build: its levels with their sizes."""
    parts = []
    for name, path in sorted(files.items()):
        try:
            parts.append(f"{name}:{path.stat().st_size}")
        except OSError:
            parts.append(f"{name}:?")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


@dataclass
class VariantRecord:
    """What this machine taught us about the installed build: the level that passed the probe,
    and the levels that crashed (name → what happened). Only names: the files come from
    `variant_files`, never from the record, so a planted record can choose nothing else."""

    cpu: str
    build: str
    working: str | None = None
    failed: dict[str, str] = field(default_factory=dict)

    def candidates(self, scores: dict[str, int]) -> list[str]:
        """Levels worth trying, best first: the one that worked, then by score, none that
        crashed; a score of 0 means this CPU lacks what the level needs."""
        ranked = sorted(
            (name for name, score in scores.items() if score > 0 and name not in self.failed),
            key=lambda name: -scores[name],
        )
        if self.working in ranked:
            ranked.remove(self.working)
            ranked.insert(0, self.working)
        return ranked


def load_record(path: Path | None, cpu: str, build: str) -> VariantRecord:
    """The record for this CPU and build, or a fresh one (another machine's, another build's,
    or an unreadable record teaches nothing here)."""
    fresh = VariantRecord(cpu=cpu, build=build)
    if path is None:
        return fresh
    try:
        with path.open("rb") as handle:
            raw = handle.read(_RECORD_MAX_BYTES + 1)
    except FileNotFoundError:
        return fresh
    except OSError as exc:
        log.warning("could not read %s: %s", path, exc)
        return fresh
    try:
        data = json.loads(raw) if len(raw) <= _RECORD_MAX_BYTES else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        return fresh
    if data.get("cpu") != cpu or data.get("build") != build:
        return fresh
    working = data.get("working")
    failed = data.get("failed")
    return VariantRecord(
        cpu=cpu,
        build=build,
        working=working if isinstance(working, str) else None,
        failed={
            str(k): str(v)[:200]
            for k, v in (failed.items() if isinstance(failed, dict) else [])
            if isinstance(k, str)
        },
    )


def save_record(path: Path | None, record: VariantRecord) -> None:
    """Write the record whole (a temporary file renamed over it); a failure is logged, not
    raised: the worst case is one more probe at the next start."""
    if path is None:
        return
    data = {
        "format": RECORD_FORMAT,
        "cpu": record.cpu,
        "build": record.build,
        "working": record.working,
        "failed": record.failed,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".llm-cpu-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    except OSError as exc:
        log.warning("could not save %s: %s", path, exc)
