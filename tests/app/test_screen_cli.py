"""Issue 4's screen promise end to end: under a real Xvfb with a real window showing known text,
`chamberlain ask "what's on my screen?"` with a screen_read grant answers with that text, and
without a grant it is denied. The CLI runs in a subprocess; OCR is the real engine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import ask_json, make_user, run_cli
from tests.support.xvfb import XVFB, Xvfb, running_xvfb

KNOWN = "Chamberlain heron 5832"


@pytest.fixture
def screen(tmp_path: Path) -> Iterator[Xvfb]:
    if XVFB is None:
        if os.environ.get("CI"):
            pytest.fail("Xvfb is not installed; scripts/setup.sh installs it")
        pytest.skip("Xvfb is not installed (scripts/setup.sh installs it with apt-get)")
    with running_xvfb(1280, 800) as server:
        server.show_text("notice", KNOWN)
        yield server


def test_whats_on_my_screen_reads_the_window_text(tmp_path: Path, screen: Xvfb) -> None:
    user = make_user(tmp_path / "user")
    env = {"DISPLAY": screen.display}
    proc, turn = ask_json(
        user, "what's on my screen?", "--llm", "none", "--approve", "screen_read=once", env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert turn["direct"] is True
    assert turn["tool_calls"][0]["tool"] == "screen_capture"
    assert "heron" in turn["reply"].lower()
    shots = list((user / ".chamberlain" / "screenshots").glob("*.png"))
    assert len(shots) == 1
    assert oct(shots[0].stat().st_mode & 0o777) == "0o600"


def test_screen_without_a_grant_is_denied(tmp_path: Path, screen: Xvfb) -> None:
    user = make_user(tmp_path / "user")
    proc = run_cli(
        user, "ask", "what's on my screen?", "--llm", "none", env={"DISPLAY": screen.display}
    )
    assert proc.returncode == 1
    assert "I did not take a screenshot" in proc.stdout
    assert "permission to see your screen" in proc.stdout
    assert "--approve screen_read=once" in proc.stderr  # the flag takes the capability's id
    assert "heron" not in proc.stdout.lower()


def test_no_display_is_a_clear_error(tmp_path: Path) -> None:
    user = make_user(tmp_path / "user")
    proc = run_cli(
        user,
        "ask",
        "take a screenshot",
        "--llm",
        "none",
        "--approve-all",
        "once",
        env={"DISPLAY": "", "WAYLAND_DISPLAY": ""},
    )
    assert proc.returncode == 1
    assert "needs a display" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
