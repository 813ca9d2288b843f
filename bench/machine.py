"""What machine a benchmark ran on: printed beside every figure, since this VM is shared."""

from __future__ import annotations

import contextlib
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def _proc_value(path: str, prefix: str) -> str | None:
    with contextlib.suppress(OSError):
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    return None


def machine_details() -> dict[str, Any]:
    """uname, CPU model, cores, RAM, Python, load average and the time, where readable."""
    ram = None
    total_kib = _proc_value("/proc/meminfo", "MemTotal:")
    with contextlib.suppress(ValueError, IndexError, AttributeError):
        ram = f"{int(total_kib.split()[0]) / 1024**2:.1f} GiB" if total_kib else None
    load = None
    with contextlib.suppress(OSError, AttributeError):
        load = [round(x, 2) for x in os.getloadavg()]
    return {
        "uname": " ".join(platform.uname()),
        "cpu": _proc_value("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "nproc": os.cpu_count(),
        "ram": ram,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "load_average": load,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def filesystem_of(directory: Path) -> str | None:
    """The filesystem type `directory` lives on (Linux), e.g. "ext4" or "tmpfs"."""
    found, best = None, ""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/mounts").read_text().splitlines():
            _dev, mount, fstype, *_ = line.split()
            if str(directory).startswith(mount) and len(mount) >= len(best):
                best, found = mount, fstype
    return found
