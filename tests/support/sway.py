"""A real headless sway (Wayland) session for tests, run as a normal user, with or without the
desktop portal:

    report = in_sway(["-m", "tests.support.wayland_probe", "screen"], portal=True)

Everything runs inside one bubblewrap with its own PID namespace and its own /tmp: sway on the
headless wlroots backend (pixman, no GPU), a session bus, and, with `portal`, PipeWire and
xdg-desktop-portal with its wlr backend (started by the bus on first use, as a desktop does; the
GTK backend only for the Access interface the portal requires). The command given is the
session's last process: when it ends, bubblewrap ends every process of the session with it, so
nothing is left running, and the portal's /tmp/out.png never reaches the machine's /tmp. As root
the session runs as nobody (a person's desktop never runs as root); else as the caller.

The command's stdout is returned as JSON; the session's logs are in the scratch folder, quoted
in the error when the command fails. Without sway, grim or bubblewrap the caller skips (and fails
on CI, where scripts/setup.sh installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.reach import reach_wrapper

REPO = Path(__file__).resolve().parents[2]
SWAY = shutil.which("sway")
GRIM = shutil.which("grim")
BWRAP = shutil.which("bwrap")
PORTAL = Path("/usr/libexec/xdg-desktop-portal")
PORTAL_WLR = Path("/usr/libexec/xdg-desktop-portal-wlr")
PIPEWIRE = shutil.which("pipewire")
NOBODY = 65534

SWAY_CONFIG = """\
output HEADLESS-1 resolution 1280x800 position 0 0
xwayland disable
default_border normal 2
focus_on_window_activation focus
for_window [app_id="chamberlain-probe"] floating enable, move position 200 150
"""

# The session: sway first (its sockets in $XDG_RUNTIME_DIR), then the bus the portal is
# activated on, then the command. `exec`: the command is the session's last process.
SESSION = r"""
set -u
cd "$SCRATCH"
export HOME="$SCRATCH/home"  # runuser sets nobody's own (/nonexistent)
sway -c "$SCRATCH/sway.conf" >"$SCRATCH/logs/sway.log" 2>&1 &
i=0
while [ ! -S "$XDG_RUNTIME_DIR/wayland-1" ] \
  || ! ls "$XDG_RUNTIME_DIR"/sway-ipc.*.sock >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -gt 200 ] && { echo "sway did not start" >&2; exit 97; }
  sleep 0.05
done
export WAYLAND_DISPLAY=wayland-1
SWAYSOCK=$(ls "$XDG_RUNTIME_DIR"/sway-ipc.*.sock); export SWAYSOCK
if [ "$WITH_PORTAL" = 1 ]; then
  DBUS_SESSION_BUS_ADDRESS=$(dbus-daemon --session --fork --print-address=1 \
    --address="unix:path=$XDG_RUNTIME_DIR/bus" | head -n 1)
  export DBUS_SESSION_BUS_ADDRESS
  pipewire >"$SCRATCH/logs/pipewire.log" 2>&1 &
fi
exec "$@"
"""


def missing() -> str | None:
    """What this machine lacks for a sway session, or None."""
    for name, found in (("sway", SWAY), ("grim", GRIM), ("bubblewrap", BWRAP)):
        if found is None:
            return f"{name} is not installed (scripts/setup.sh --test installs it)"
    return None


def portal_missing() -> str | None:
    if not (PORTAL.exists() and PORTAL_WLR.exists() and PIPEWIRE):
        return "xdg-desktop-portal-wlr or pipewire is not installed (scripts/setup.sh --test)"
    return None


class SwayError(RuntimeError):
    pass


def in_sway(
    args: Sequence[str],
    *,
    portal: bool,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 240.0,
) -> Any:
    """Run `python args...` (this interpreter, from the repository) as the last process of a
    fresh headless sway session; its stdout, read as JSON."""
    # /tmp, not pytest's tmp_path: nobody cannot enter /tmp/pytest-of-root.
    scratch = Path(tempfile.mkdtemp(prefix="chamberlain-sway-", dir="/tmp"))
    try:
        for sub in ("run", "home", "logs", "ch"):
            (scratch / sub).mkdir()
        (scratch / "run").chmod(0o700)
        (scratch / "sway.conf").write_text(SWAY_CONFIG)
        (scratch / "session.sh").write_text(SESSION)
        as_root = os.geteuid() == 0
        if as_root:
            for path in [scratch, *scratch.rglob("*")]:
                os.chown(path, NOBODY, NOBODY)
        environ = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(scratch / "home"),
            "CHAMBERLAIN_HOME": str(scratch / "ch"),
            "XDG_RUNTIME_DIR": str(scratch / "run"),
            "XDG_SESSION_TYPE": "wayland",
            "XDG_CURRENT_DESKTOP": "sway",
            "WLR_BACKENDS": "headless",
            "WLR_LIBINPUT_NO_DEVICES": "1",
            "WLR_RENDERER": "pixman",
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(REPO),
            "PYTHONDONTWRITEBYTECODE": "1",
            "SCRATCH": str(scratch),
            "WITH_PORTAL": "1" if portal else "0",
            **(env or {}),
        }
        # The session's own /tmp hides the machine's: a checkout or Python that lives there (a
        # fresh clone in /tmp, as CI may make) is shown again, read-only.
        under_tmp = sorted(
            {str(p) for p in (REPO, Path(sys.prefix), Path(sys.base_prefix).resolve())
             if Path("/tmp") in p.resolve().parents}
        )  # fmt: skip
        shown = [arg for path in under_tmp for arg in ("--ro-bind", path, path)]
        command = [
            str(BWRAP), "--dev-bind", "/", "/", "--proc", "/proc", "--tmpfs", "/tmp", *shown,
            "--bind", str(scratch), str(scratch), "--unshare-pid", "--die-with-parent",
            "--chdir", str(REPO), "--", "sh", str(scratch / "session.sh"), sys.executable, *args,
        ]  # fmt: skip
        if as_root:
            runuser = shutil.which("runuser") or "/usr/sbin/runuser"
            command = [*reach_wrapper(), runuser, "-u", "nobody", "--", *command]
        try:
            done = subprocess.run(
                command, env=environ, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise SwayError(f"the sway session took over {timeout_s} s\n{_logs(scratch)}") from exc
        if done.returncode != 0:
            raise SwayError(
                f"exit {done.returncode}\nstderr: {done.stderr[-3000:]}\n{_logs(scratch)}"
            )
        try:
            return json.loads(done.stdout)
        except ValueError as exc:
            raise SwayError(f"not JSON: {done.stdout[-2000:]!r}\n{done.stderr[-2000:]}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _logs(scratch: Path) -> str:
    parts = []
    for log in sorted((scratch / "logs").glob("*.log")):
        parts.append(f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}")
    return "\n".join(parts)
