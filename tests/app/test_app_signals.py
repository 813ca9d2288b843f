"""The desktop app ends as Quit does on SIGTERM (logout, `kill`, a package upgrade): cleanly,
with exit code 0, its MCP servers' programs ended with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.support.mcp_notes import notes_config, running_with, write_notes

REPO = Path(__file__).resolve().parents[2]


def test_sigterm_quits_the_app_and_its_mcp_servers(tmp_path):
    notes = write_notes(tmp_path / "notes")
    home = tmp_path / "home"
    home.mkdir()
    server = notes_config(notes).model_dump(mode="json", exclude_defaults=True)
    (home / "settings.json").write_text(json.dumps({"mcp": {"servers": {"notes": server}}}))
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
