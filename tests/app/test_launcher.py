"""`chamberlain` chooses: the desktop app with no command, the headless CLI with one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.launcher import wants_app


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
    from pathlib import Path

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
