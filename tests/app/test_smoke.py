"""`chamberlain --smoke-test` from a fresh process: every window, one request, a clean exit.

A real subprocess of the real entry point, offscreen, in a scratch HOME; it makes its own
throwaway Chamberlain home and removes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


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
        cwd=Path(__file__).resolve().parents[2],
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.strip() == "smoke test: ok"
    assert list(tmp_path.iterdir()) == []  # its throwaway home is gone, nothing else written
