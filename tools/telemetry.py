"""Our dependencies' telemetry, kept off: the switches, and what an earlier version left behind.

onnxruntime (under rapidocr-onnxruntime, the OCR engine of the screen tools) sends usage
telemetry to Microsoft from Linux since 1.29. Left alone, 1.31.1's first run in a process writes
a device id and a queue of events — the program's path, the OS, the CPU model, the network type —
to `$XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime/` (`~/.cache/…` when that is unset), to
be uploaded to mobile.events.data.microsoft.com. `ORT_DISABLE_TELEMETRY=1`, read once when
onnxruntime sets itself up, prevents all of it (no device id, no events, no uploader). The Python
call `onnxruntime.disable_telemetry_events()` comes too late for that: onnxruntime has already
written its device id and first event by the time it can be called (checked on 1.31.1).

So the switch is set in `os.environ` before onnxruntime can load: when the `app` package is
imported (every front end), by the bundle's runtime hook (packaging/hooks/), and again just before
the OCR engine is imported (tools/screen.py), which covers code that reaches the engine without a
front end. Programs Chamberlain starts with our environment inherit it. docs/TELEMETRY.md has the
check of every dependency.

This module must never import a dependency of its own accord (the switches must be in place
before the first one loads), never let an environment a person set turn a switch back on (there
is no opt-in: invariant 7), and never remove anything but onnxruntime's own telemetry folder.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
from collections.abc import Mapping, MutableMapping
from pathlib import Path

# ORT_DISABLE_TELEMETRY is what onnxruntime 1.31.1 reads (its shared library's strings, its
# Privacy.md). Upstream sources after it also read ORT_TELEMETRY_DISABLED
# (core/platform/telemetry_environment.h): set too, so an upgrade cannot turn telemetry back on.
SWITCHES: Mapping[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",
    "ORT_TELEMETRY_DISABLED": "1",
}

# Where onnxruntime keeps its device id (`deviceid`) and event queue (`onnxruntime.db`), under the
# cache folder. Only this last part is onnxruntime's: `Microsoft/DeveloperTools` may hold other
# Microsoft tools' files.
ONNXRUNTIME_FOLDER = Path("Microsoft", "DeveloperTools", ".onnxruntime")

log = logging.getLogger("chamberlain.tools.telemetry")


def switch_off(environ: MutableMapping[str, str] | None = None) -> None:
    """Set every switch in `environ` (this process's environment by default)."""
    env = os.environ if environ is None else environ
    env.update(SWITCHES)


def suppress_onnxruntime_events() -> None:
    """Also tell a loaded onnxruntime to send no more events; call right after loading it.

    Belt and braces: with the switch set, onnxruntime has nothing to suppress. Should anything
    ever load it before the switch, this still stops the events of every later session (model
    names, run counts and times), though not the device id and first event already written.
    """
    ort = importlib.import_module("onnxruntime")  # loaded already: this only looks it up
    disable = getattr(ort, "disable_telemetry_events", None)
    if disable is None:  # a build without the call (not the wheel we pin)
        return
    try:
        disable()
    except RuntimeError as exc:  # onnxruntime's own errors; the switch still holds
        log.warning("onnxruntime refused to turn its telemetry events off: %s", exc)


def onnxruntime_folders(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where onnxruntime may have written its telemetry for this user, whether or not it did.

    Both places: the one under `$XDG_CACHE_HOME` when that is set now, and the one under
    `~/.cache`, in case an earlier run saw a different environment.
    """
    env = os.environ if environ is None else environ
    caches = [home / ".cache"]
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        caches.insert(0, Path(xdg))
    return list(dict.fromkeys(cache / ONNXRUNTIME_FOLDER for cache in caches))


def onnxruntime_leftovers(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    """The telemetry folders onnxruntime did leave (as files, links or folders)."""
    return [path for path in onnxruntime_folders(home, environ) if os.path.lexists(path)]


def remove_onnxruntime_leftovers(
    home: Path, environ: Mapping[str, str] | None = None
) -> list[Path]:
    """Remove onnxruntime's telemetry folders; the ones removed.

    A symlink in its place is removed, never what it points to. The `DeveloperTools` and
    `Microsoft` folders above it go too when nothing else is left in them; anything else in them
    stays. Raises OSError when a folder cannot be removed.
    """
    removed: list[Path] = []
    for path in onnxruntime_leftovers(home, environ):
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path)
        removed.append(path)
        for parent in (path.parent, path.parent.parent):
            try:
                parent.rmdir()
            except OSError:  # not empty (another tool's files), or not ours to remove
                break
    return removed
