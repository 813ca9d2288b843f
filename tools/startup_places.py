"""Startup and code-running places: files and folders whose contents run later, on their own.

A shell reads `~/.bashrc` at the next login, the desktop starts what `~/.config/autostart` lists,
systemd starts user units, git runs `core.fsmonitor` or a hook from `.git/config` and `.git/hooks`
at the person's next git command, Python runs `.pth` files and `sitecustomize` when it starts, a
program dropped in `~/.local/bin` runs the next time its name is typed. A command that may write
one of these plants something that runs outside any sandbox later: one "Allow once" for a patch
would become a permanent foothold.

So these places are never writable through a command's writable folder unless the call names
them: the sandbox binds each one read-only over itself (and makes the folder a missing one would
be created in read-only, so it cannot be created), and a call that names one says in its prompt
when that place runs (`CallPlan.startup`) and can only be allowed once.

Limits, said plainly: a repository made by the command itself (`git init` in a writable
folder) is not held, nor one planted inside a package cache (`node_modules`), which is not
searched; a folder too big to search (`MAX_FOLDERS_SEARCHED`) is not made writable at all.

This module only answers "is this a startup place, and when does it run" and finds them inside a
folder; it never reads a file's contents and never changes anything.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.private import within

LOGIN = "runs at your next login"
TERMINAL = "runs when you next open a terminal"
DESKTOP = "runs when your desktop session starts"
GIT = "runs at your next git command"
PYTHON = "runs when Python starts"
TYPED = "runs the next time you type a program's name"
SCHEDULE = "runs on a schedule"
SSH = "lets someone log in to this computer as you"
OPENED = "runs when you next open an application or a file from your desktop"
EDITOR = "runs when you next open your editor"
VENV = "runs when you next use this Python environment"
CHAMBERLAIN = "runs when Chamberlain starts"

# Places under a home folder (relative to it) and when what they hold runs.
HOME_PLACES: tuple[tuple[str, str], ...] = (
    (".profile", LOGIN), (".bash_profile", LOGIN), (".bash_login", LOGIN),
    (".bash_logout", LOGIN), (".bashrc", TERMINAL), (".bashrc.d", TERMINAL),
    (".zshrc", TERMINAL), (".zshenv", TERMINAL), (".zprofile", LOGIN), (".zlogin", LOGIN),
    (".zlogout", LOGIN), (".config/fish", TERMINAL), (".kshrc", TERMINAL), (".mkshrc", TERMINAL),
    (".cshrc", TERMINAL), (".tcshrc", TERMINAL), (".login", LOGIN), (".inputrc", TERMINAL),
    (".xprofile", DESKTOP), (".xinitrc", DESKTOP), (".xsession", DESKTOP),
    (".xsessionrc", DESKTOP), (".pam_environment", LOGIN), (".config/environment.d", LOGIN),
    (".config/autostart", DESKTOP), (".config/autostart-scripts", DESKTOP),
    (".config/plasma-workspace", DESKTOP), (".kde/Autostart", DESKTOP),
    (".config/systemd/user", LOGIN), (".local/share/systemd/user", LOGIN),
    (".gitconfig", GIT), (".config/git", GIT),
    (".local/lib", PYTHON), (".pythonrc", PYTHON), (".pythonrc.py", PYTHON),
    (".local/bin", TYPED), ("bin", TYPED),
    (".local/share/applications", OPENED), (".config/mimeapps.list", OPENED),
    (".local/share/dbus-1", OPENED),
    (".config/i3", DESKTOP), (".config/sway", DESKTOP), (".config/hypr", DESKTOP),
    (".config/openbox", DESKTOP), (".config/labwc", DESKTOP), (".config/awesome", DESKTOP),
    (".config/lxsession", DESKTOP), (".xmonad", DESKTOP),
    (".vimrc", EDITOR), (".vim", EDITOR), (".config/nvim", EDITOR), (".emacs", EDITOR),
    (".emacs.d", EDITOR), (".config/emacs", EDITOR),
    (".ssh/authorized_keys", SSH), (".ssh/authorized_keys2", SSH), (".ssh/rc", LOGIN),
)  # fmt: skip

# System places commands never write (the system is read-only in the sandbox); listed so a call
# that names one says what it is.
SYSTEM_PLACES: tuple[tuple[str, str], ...] = (
    ("/var/spool/cron", SCHEDULE), ("/etc/cron.d", SCHEDULE), ("/etc/crontab", SCHEDULE),
    ("/etc/profile", LOGIN), ("/etc/profile.d", LOGIN), ("/etc/bash.bashrc", TERMINAL),
    ("/etc/xdg/autostart", DESKTOP), ("/etc/systemd", LOGIN),
)  # fmt: skip

# The python site folders whose .pth files and sitecustomize run at every start.
_SITE_NAMES = ("site-packages", "dist-packages")
# How many folders a writable folder may hold for the search for repositories and site
# folders in it; past this the search cannot promise it found them all, and the folder is not
# made writable (the command sees it read-only, and its plan says so).
MAX_FOLDERS_SEARCHED = 50_000
# Trees searched no further: package caches and build output, where nobody runs git or Python
# from (a repository planted deep inside one is not found; see the module docstring).
_NOT_SEARCHED = frozenset({"node_modules", "__pycache__", ".tox", ".mypy_cache", ".cache"})


@dataclass(frozen=True)
class StartupPlace:
    """A file or folder that runs code later, and when."""

    path: Path
    when: str


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return path


def chamberlain_program() -> Path:
    """The folder Chamberlain's own code runs from (a source checkout or the installed bundle)."""
    return _real(Path(__file__).resolve().parent.parent)


def fixed_places(home: Path, app_dirs: Iterable[Path] = ()) -> tuple[StartupPlace, ...]:
    """The startup places of `home` that do not depend on what a folder holds."""
    homes = dict.fromkeys([home, _real(home)])
    places = [StartupPlace(h / rel, when) for h in homes for rel, when in HOME_PLACES]
    places += [StartupPlace(Path(p), when) for p, when in SYSTEM_PLACES]
    places += [StartupPlace(_real(Path(d)), CHAMBERLAIN) for d in app_dirs]
    places.append(StartupPlace(chamberlain_program(), CHAMBERLAIN))
    return tuple(dict.fromkeys(places))


def _is_bare_repository(folder: Path, names: set[str]) -> bool:
    return {"HEAD", "config", "objects", "refs"} <= names and folder.name != ".git"


def place_of(path: Path, home: Path, app_dirs: Iterable[Path] = ()) -> StartupPlace | None:
    """The startup place a resolved `path` is or lies in, or None.

    Besides the fixed places: a repository's `.git` (folder or pointer file: its `config`,
    `hooks` and `commondir` decide what git runs, so all of it), a `.pth` file or
    `sitecustomize`/`usercustomize` anywhere, and any site-packages folder.
    """
    for place in fixed_places(home, app_dirs):
        if within(path, place.path):
            return StartupPlace(place.path, place.when)
    parts = path.parts
    for index, part in enumerate(parts):
        if part == ".git":
            return StartupPlace(Path(*parts[: index + 1]), GIT)
        if part in _SITE_NAMES:
            return StartupPlace(Path(*parts[: index + 1]), PYTHON)
    if path.suffix == ".pth" or path.stem in ("sitecustomize", "usercustomize"):
        return StartupPlace(path, PYTHON)
    for folder in (path, *path.parents):
        if os.path.isfile(folder / "pyvenv.cfg"):
            return StartupPlace(folder, VENV)
    return None


def places_in(
    folder: Path,
    home: Path,
    app_dirs: Iterable[Path] = (),
    *,
    skip: Sequence[Path] = (),
    limit: int = MAX_FOLDERS_SEARCHED,
) -> list[StartupPlace] | None:
    """Every startup place inside `folder` (a folder a command may write): the fixed ones that
    lie in it, and the repositories' and Python site folders' found by walking it (symlinks
    not followed, `skip` (private places, covered anyway) not entered).

    None when the folder holds more than `limit` folders: then the search cannot promise it
    found every repository, and the folder must not be made writable.
    """
    found = [p for p in fixed_places(home, app_dirs) if within(p.path, folder)]
    if any(within(folder, p.path) for p in fixed_places(home, app_dirs)):
        return found  # the caller handles a folder that is itself (inside) a startup place
    # Reached top-down, a private folder is met as itself: an exact match prunes it.
    skipped = set(skip)
    pending = [folder]
    seen = 0
    while pending:
        current = pending.pop()
        seen += 1
        if seen > limit:
            return None
        try:
            with os.scandir(current) as entries:
                listed = list(entries)
        except OSError:
            continue
        names = {entry.name for entry in listed}
        if _is_bare_repository(current, names):
            found.append(StartupPlace(current, GIT))
            continue
        if "pyvenv.cfg" in names and current != folder:
            # A virtual environment: its bin/activate and python run at its next use.
            found.append(StartupPlace(current, VENV))
            continue
        for entry in listed:
            path = Path(entry.path)
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if entry.name == ".git":
                found.append(StartupPlace(path, GIT))
                continue
            if not stat.S_ISDIR(mode) or entry.name in _NOT_SEARCHED:
                continue
            if path in skipped:
                continue
            if entry.name in _SITE_NAMES:
                found.append(StartupPlace(path, PYTHON))
                continue
            pending.append(path)
    return list(dict.fromkeys(found))
