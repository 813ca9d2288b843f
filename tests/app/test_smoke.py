"""`chamberlain --smoke-test` from a fresh process: every window, one request, a clean exit.

A real subprocess of the real entry point, offscreen, in a scratch HOME; it makes its own
throwaway Chamberlain home and removes it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_smoke_test_passes_with_nothing_on_stderr(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "QT_QPA_PLATFORM": "offscreen",
    }
    done = subprocess.run(
        [sys.executable, "-m", "app.launcher", "--smoke-test"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.strip() == "smoke test: ok"
    assert list(tmp_path.iterdir()) == []  # its throwaway home is gone, nothing else written


def test_the_callers_chamberlain_variables_never_change_the_result(tmp_path: Path) -> None:
    """Each variable set to what would break the smoke test if it counted — a memory passphrase
    (no passphrase dialog to test), a home elsewhere, settings that deny its request or are not
    valid at all — and every other CHAMBERLAIN_* name the sources read. No display either: the
    smoke test needs none."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    user = tmp_path / "user"
    user.mkdir()
    hostile = {
        "CHAMBERLAIN_MEMORY_PASSPHRASE": "the caller's own passphrase",
        "CHAMBERLAIN_HOME": str(elsewhere),
        "CHAMBERLAIN_MEMORY__ENCRYPTION": "off",
        "CHAMBERLAIN_POLICY__DENY": '["file_list"]',
        "CHAMBERLAIN_PROFILE__NAME": "offline",
        "CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS": "99",
        "chamberlain_tools__file_read_max_bytes": "1",
    }
    read_by_name = {
        name
        for folder in ("app", "broker", "memory", "tools")
        for source in (REPO / folder).rglob("*.py")
        for name in re.findall(r"CHAMBERLAIN_[A-Z0-9_]*[A-Z0-9]", source.read_text())
    }
    for name in sorted(read_by_name - {"CHAMBERLAIN_LOG"} - set(hostile)):
        hostile[name] = "not-what-the-smoke-test-expects"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(user), **hostile}
    done = subprocess.run(
        [sys.executable, "-m", "app.launcher", "--smoke-test"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.strip() == "smoke test: ok"
    assert list(elsewhere.iterdir()) == []
    assert list(user.iterdir()) == []
