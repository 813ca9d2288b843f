"""Human-readable sizes for tool output. Formatting only: no I/O, no policy."""

from __future__ import annotations


def human_size(n: float) -> str:
    """1536 -> '1.5 KiB'."""
    if n < 1024:
        return f"{int(n)} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} PiB"
