"""The desktop app ends as Quit does on SIGTERM (logout, `kill`, a package upgrade): cleanly,
with exit code 0, its MCP servers' programs ended with it, whatever dialog is open."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from app.passphrase import PassphraseDialog
from app.single_instance import lock_path, read_holder
from tests.support.app import app_env, running_app
from tests.support.mcp_notes import notes_config, running_with, write_notes
from tests.support.settings import write_settings
from tests.support.xvfb import running_xvfb

REPO = Path(__file__).resolve().parents[2]


def test_sigterm_quits_the_app_and_its_mcp_servers(tmp_path):
    notes = write_notes(tmp_path / "notes")
    home = tmp_path / "home"
    home.mkdir()
    server = notes_config(notes).model_dump(mode="json", exclude_defaults=True)
    write_settings(home, {"mcp": {"servers": {"notes": server}}})
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "CHAMBERLAIN_HOME": str(home),
        "CHAMBERLAIN_MEMORY__ENCRYPTION": "off",
        "CHAMBERLAIN_LLM__URL": "none",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "QT_QPA_PLATFORM": "offscreen",
        "PYTHONPATH": str(REPO),
    }
    app = subprocess.Popen(
        [sys.executable, "-m", "app.launcher"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        end = time.monotonic() + 30
        while not running_with(str(notes)) and time.monotonic() < end:
            time.sleep(0.1)
        servers = running_with(str(notes))
        assert servers, "the app did not start its MCP server"
        app.send_signal(signal.SIGTERM)
        code = app.wait(20)
        assert code == 0, app.stderr.read() if app.stderr else ""
        _gone, alive = psutil.wait_procs(servers, timeout=5)
        assert alive == []
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(5)
        for proc in running_with(str(notes)):
            proc.kill()


PASSPHRASE_TITLE = PassphraseDialog.TITLE
# Generous: the app's imports on a busy 2-core machine, then a keyring deadline of 5 s.
START_S = 90
QUIT_S = 30


def _audit_verifies(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "audit", "verify"],
        env=env,
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_sigterm_while_the_passphrase_dialog_is_open_quits_and_leaves_nothing_half_made(
    tmp_path,
):
    """A first run with no keyring: the passphrase dialog is on a real (Xvfb) screen when the
    session ends (SIGTERM at logout). The app used to hang for ever there: its UI thread waited
    for the io thread, which waited for the dialog that only the UI thread can run."""
    with running_xvfb() as server:
        env = app_env(tmp_path, display=server.display)
        with running_app(env) as app:
            server.wait_for_window(PASSPHRASE_TITLE, app, timeout=START_S)
            app.send_signal(signal.SIGTERM)
            code = app.wait(QUIT_S)
            stderr = app.stderr.read() if app.stderr else ""
    assert code == 0, stderr
    assert "Traceback" not in stderr
    home = tmp_path / "home"
    # No passphrase was chosen: no memory was created, nor a record of how it is keyed.
    assert not (home / "memory.db").exists()
    assert not (home / "memory.keying").exists()
    # The next start is not blocked: the instance lock names no process any more.
    assert read_holder(lock_path(home)) is None
    verified = _audit_verifies(env)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_keyring_that_never_answers_gives_way_to_the_passphrase_and_quit_still_works(
    tmp_path,
):
    """A keyring backend that blocks in every call (a hung Secret Service): the app does not sit
    there doing nothing; after the keyring's deadline it says so (stderr) and asks for a
    passphrase instead, and SIGTERM still ends it with 0 although the keyring call never
    returns."""
    with running_xvfb() as server:
        env = app_env(
            tmp_path,
            display=server.display,
            PYTHON_KEYRING_BACKEND="tests.support.keyring.HangingKeyring",
        )
        with running_app(env) as app:
            server.wait_for_window(PASSPHRASE_TITLE, app, timeout=START_S)
            app.send_signal(signal.SIGTERM)
            code = app.wait(QUIT_S)
            stderr = app.stderr.read() if app.stderr else ""
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert "the system keyring did not answer within 5 s" in stderr
    home = tmp_path / "home"
    # The token secret fell back to the private file, as with no keyring at all.
    assert len((home / "token.key").read_text("ascii")) == 64
    assert not (home / "memory.db").exists()
