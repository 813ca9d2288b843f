"""Start at login: Chamberlain's XDG autostart entry, written and removed on the user's word.

The entry is ``$XDG_CONFIG_HOME/autostart/chamberlain.desktop`` (``~/.config/autostart`` when
the variable is unset or not absolute, as the XDG Base Directory spec says). Desktops that
follow the XDG Autostart spec (GNOME, KDE, Xfce, ...) start what it names when the user logs in.

What it must never do: touch any other autostart entry, write anywhere but that one file, or
leave a half-written entry (it is written to a temporary file and renamed into place). It needs
no Qt; the Settings window calls it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from core.errors import StorageError

ENTRY_NAME = "chamberlain.desktop"
# Marks the entry as ours, so `is_enabled` never mistakes a hand-made file of that name.
_MARKER = "X-Chamberlain-Autostart=true"


class AutostartError(StorageError):
    """The entry could not be written or removed; the message says why and what to do."""


def config_home() -> Path:
    value = os.environ.get("XDG_CONFIG_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / ".config"


def entry_path() -> Path:
    return config_home() / "autostart" / ENTRY_NAME


# Where the Debian package puts the bundle, and the command it installs for it.
INSTALL_DIR = Path("/usr/lib/chamberlain")
INSTALLED_COMMAND = Path("/usr/bin/chamberlain")


def default_command(
    *,
    frozen: bool | None = None,
    executable: str | None = None,
    install_dir: Path = INSTALL_DIR,
    installed_command: Path = INSTALLED_COMMAND,
) -> list[str]:
    """How to start this Chamberlain's desktop app at login.

    The installed package's bundle (frozen, running from /usr/lib/chamberlain) is started as
    /usr/bin/chamberlain, the command the package owns: it still names the app after an upgrade
    moves files inside /usr/lib/chamberlain. Any other built binary starts itself. From source, this
    very interpreter runs the launcher (not whatever `chamberlain` is first on PATH)."""
    frozen = getattr(sys, "frozen", False) if frozen is None else frozen
    executable = sys.executable if executable is None else executable
    if frozen:
        here = Path(executable).resolve()
        if (
            here.is_relative_to(install_dir.resolve())
            and installed_command.is_file()
            and os.access(installed_command, os.X_OK)
        ):
            return [str(installed_command)]
        return [executable]
    # -P: the folder the session starts in (the home) is not put on the import path, so a
    # planted ~/app/launcher.py cannot stand in for ours at every login.
    return [executable, "-P", "-m", "app.launcher"]


# Characters that make an Exec argument need quoting (Desktop Entry spec, "The Exec key").
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def _exec_argument(argument: str) -> str:
    r"""One argument as the Exec key wants it: quoted when it holds a reserved character, with
    `"`, `` ` ``, `$` and `\` escaped inside the quotes, `%` doubled; then the string escape
    of the whole key (`\` → `\\`), which the spec applies before unquoting."""
    if not argument:
        return '""'
    text = argument.replace("%", "%%")
    if any(c in _RESERVED for c in text):
        inner = "".join("\\" + c if c in '"`$\\' else c for c in text)
        text = f'"{inner}"'
    return text.replace("\\", "\\\\")


def render_entry(command: Sequence[str]) -> str:
    """The desktop entry that starts `command` (the program first) at login."""
    if not command:
        raise AutostartError("There is no command to start at login.")
    for argument in command:
        if any(c in argument for c in "\n\r\x00"):
            raise AutostartError(
                "The command to start at login holds a line break or NUL character, which a "
                "desktop entry cannot hold; start at login was not turned on."
            )
    exec_line = " ".join(_exec_argument(a) for a in command)
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=Chamberlain\n"
        "Comment=A local desktop assistant that asks before it acts\n"
        f"Exec={exec_line}\n"
        "Icon=chamberlain\n"
        "Terminal=false\n"
        "X-GNOME-Autostart-enabled=true\n"
        f"{_MARKER}\n"
    )


def is_enabled() -> bool:
    """Whether our entry is there (and not switched off by the desktop's own settings)."""
    try:
        text = entry_path().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    lines = {line.strip() for line in text.splitlines()}
    return (
        _MARKER in lines
        and "Hidden=true" not in lines
        and "X-GNOME-Autostart-enabled=false" not in lines
    )


def enable(command: Sequence[str]) -> Path:
    """Write the entry that starts `command` at login (replacing an older one of ours)."""
    path = entry_path()
    body = render_entry(command)
    tmp = path.with_name(f".{ENTRY_NAME}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(body, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise AutostartError(
            f"Could not turn on start at login: {path} could not be written "
            f"({exc.strerror or exc}). Check that {path.parent} is writable."
        ) from exc
    return path


def disable() -> bool:
    """Remove the entry; False when there was none."""
    path = entry_path()
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise AutostartError(
            f"Could not turn off start at login: {path} could not be removed "
            f"({exc.strerror or exc}). Remove it by hand to stop Chamberlain starting at login."
        ) from exc
    return True
