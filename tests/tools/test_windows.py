"""The active-window lookup when the X server will not let this user in.

Real parts: an Xvfb started with access control (`-auth` with a cookie this process is not
given), the real get_active_window tool, and the real CLI through the real runner. The finding
of the active window itself is tested in tests/tools/test_screen.py.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import ask_json
from tools.manual import ToolError
from tools.registry import ToolConfig
from tools.screen import make_screen_tools

XVFB, XAUTH = shutil.which("Xvfb"), shutil.which("xauth")
NOT_ALLOWED = "refused the connection: it does not let this user in (X access control"


@pytest.fixture
def guarded_display(tmp_path: Path) -> Iterator[str]:
    """An X display with access control on: only clients with its cookie get in, and this
    process has none. Stopped by its PID afterwards."""
    if XVFB is None or XAUTH is None:
        pytest.fail("Xvfb and xauth are needed (scripts/setup.sh installs xvfb and xauth)")
    cookies = tmp_path / "server.xauth"
    subprocess.run(
        [XAUTH, "-f", str(cookies), "add", ":0", ".", secrets.token_hex(16)],
        check=True,
        capture_output=True,
    )
    # -displayfd: Xvfb takes the first free display and writes its number once it accepts
    # connections (the server loads every cookie of the file, whichever display it names).
    read_fd, write_fd = os.pipe()
    server = subprocess.Popen(
        [XVFB, "-displayfd", str(write_fd), "-auth", str(cookies), "-nolisten", "tcp"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(write_fd,),
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as announced:
            number = announced.readline().strip().decode()
        if not number.isdigit():
            pytest.fail("Xvfb did not start")
        yield f":{number}"
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)


def test_a_display_that_refuses_this_user_is_a_tool_error_that_says_so(
    guarded_display: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISPLAY", guarded_display)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("XAUTHORITY", str(tmp_path / "no-cookies-here"))
    (window,) = [t for t in make_screen_tools(ToolConfig()) if t.name == "get_active_window"]
    with pytest.raises(ToolError) as raised:
        window.run({})
    assert str(raised.value).startswith(f"The X display {guarded_display} {NOT_ALLOWED}")
    assert "$XAUTHORITY" in str(raised.value)  # where the missing cookie would come from


def test_which_window_is_active_on_a_refusing_display_ends_the_turn_with_that_sentence(
    guarded_display: str, tmp_path: Path
) -> None:
    """`chamberlain ask` in a subprocess, through the real runner: the call is an error with
    the sentence, the turn ends, and nothing like a traceback reaches stderr."""
    env = {"DISPLAY": guarded_display, "XAUTHORITY": str(tmp_path / "no-cookies-here")}
    proc, out = ask_json(
        tmp_path,
        "which window is active?",
        "--llm",
        "none",
        "--approve",
        f"screen_read=session:display:{guarded_display}",
        env=env,
    )
    [call] = out["tool_calls"]
    assert call["tool"] == "get_active_window"
    assert call["status"] == "error"
    assert NOT_ALLOWED in call["reason"]
    assert "Traceback" not in proc.stderr
    assert "ConnectionClosedError" not in proc.stderr + proc.stdout
