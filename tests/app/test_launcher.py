"""`chamberlain` chooses: the desktop app with no command, the headless CLI with one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.launcher import no_display, wants_app
from tests.support.xvfb import running_xvfb

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "app"),
    [
        ([], True),
        (["--home", "/tmp/x"], True),
        (["--home=/tmp/x"], True),
        (["--smoke-test"], True),
        (["--home", "/tmp/x", "--smoke-test"], True),
        (["ask", "hi"], False),
        (["--home", "/tmp/x", "doctor"], False),
        (["--help"], False),
        (["--json", "doctor"], False),
    ],
)
def test_no_command_starts_the_app_and_any_command_the_cli(argv, app):
    assert wants_app(argv) is app


def test_the_cli_path_never_loads_qt(tmp_path):
    code = (
        "import sys; from app.launcher import main; rc = main(['--home', sys.argv[1], 'route', "
        "'list files in ~/Documents']); assert not any(m.startswith('PySide6') for m in "
        "sys.modules), sorted(m for m in sys.modules if 'PySide6' in m); sys.exit(rc)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "home")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "file_task" in done.stdout


def test_version_prints_the_one_number_from_pyproject_without_qt(tmp_path):
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    expected = tomllib.loads(pyproject.read_text())["project"]["version"]
    code = (
        "import sys; from app.launcher import main; rc = main(['--version']); "
        "assert not any(m.startswith('PySide6') for m in sys.modules); sys.exit(rc)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"chamberlain {expected}\n"
    assert done.stderr == ""


# --- no graphical session: one sentence and exit 2, never Qt's abort ---------------------------

# Everything that could point Qt at a display, removed for the display-less start.
DISPLAY_VARIABLES = ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
NO_SESSION = "there is no graphical session here (DISPLAY and WAYLAND_DISPLAY are unset)"
ADVICE = (
    "from a terminal, `chamberlain ask TEXT` answers a request, `chamberlain doctor` shows what "
    "works here, and `chamberlain --smoke-test` tries the desktop app offscreen."
)


def chamberlain(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed `chamberlain` command (the venv's entry point, else the same module), as a
    person starts it, in a scratch home, with only the display variables it is given."""
    command = Path(sys.executable).with_name("chamberlain")
    argv = [str(command)] if command.exists() else [sys.executable, "-m", "app.launcher"]
    dropped = {*DISPLAY_VARIABLES, "CHAMBERLAIN_HOME"}
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    user = tmp_path / "user"
    user.mkdir(exist_ok=True)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    base.update(
        HOME=str(user),
        XDG_RUNTIME_DIR=str(runtime),
        CHAMBERLAIN_HOME=str(tmp_path / "chamberlain"),
        PYTHONPATH=str(REPO),
        **env,
    )
    return subprocess.run(
        [*argv, *args], capture_output=True, text=True, timeout=60, env=base, cwd=tmp_path
    )


def test_without_a_graphical_session_the_app_says_so_and_exits_2(tmp_path):
    done = chamberlain(tmp_path)
    assert done.returncode == 2, done.stderr  # not -6 (SIGABRT) nor 134
    assert done.stderr == f"chamberlain: the desktop app cannot start: {NO_SESSION}; {ADVICE}\n"
    assert not (tmp_path / "chamberlain").exists()
    assert not list(tmp_path.rglob("core*"))


def test_a_display_with_an_x_server_starts_the_app_and_one_without_is_refused(tmp_path):
    """A real Xvfb: while it runs, the app starts on its display; once it is gone, the same
    DISPLAY is refused before Qt is loaded (Qt would abort)."""
    with running_xvfb() as server:
        started = chamberlain(tmp_path, "--ready-and-quit", DISPLAY=server.display)
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("ready ")
    done = chamberlain(tmp_path, DISPLAY=server.display)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "chamberlain: the desktop app cannot start: no graphical session answers at "
        f"DISPLAY={server.display} (no X server listens there); {ADVICE}\n"
    )


def test_a_qt_platform_asked_for_by_name_is_used_without_a_display(tmp_path):
    """QT_QPA_PLATFORM=offscreen needs no display server: the app starts (and, asked to, quits)."""
    done = chamberlain(tmp_path, "--ready-and-quit", QT_QPA_PLATFORM="offscreen")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ready ")


def test_when_qt_cannot_open_its_platform_it_is_one_sentence_and_exit_2_not_an_abort(tmp_path):
    """Past the launcher's check (a platform asked for by name that Qt does not have), Qt's own
    fatal error is turned into the same kind of sentence, without its reinstall advice."""
    done = chamberlain(tmp_path, "--ready-and-quit", QT_QPA_PLATFORM="no-such-platform")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        "chamberlain: the desktop app cannot start: Qt cannot open a window here ("
    )
    assert "no-such-platform" in done.stderr
    assert "Reinstalling" not in done.stderr
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("environ", "why"),
    [
        ({}, NO_SESSION),
        ({"WAYLAND_DISPLAY": "wayland-0"}, None),
        ({"QT_QPA_PLATFORM": "offscreen"}, None),
        ({"QT_QPA_PLATFORM": "vnc:size=800x600"}, None),
        ({"QT_QPA_PLATFORM": "wayland;xcb", "WAYLAND_DISPLAY": "wayland-1"}, None),
        (
            {"QT_QPA_PLATFORM": "xcb"},
            "QT_QPA_PLATFORM=xcb needs a graphical session, and there is none here "
            "(DISPLAY and WAYLAND_DISPLAY are unset)",
        ),
        ({"DISPLAY": "remote.example:10.0"}, None),  # not local: Qt finds out, and says so
    ],
    ids=["nothing", "wayland", "offscreen", "vnc", "fallbacks", "xcb-without-display", "remote"],
)
def test_which_environments_can_show_the_app(environ, why):
    assert no_display(environ, platform="linux") == why


def test_windows_and_macos_are_never_refused():
    assert no_display({}, platform="win32") is None
    assert no_display({}, platform="darwin") is None
