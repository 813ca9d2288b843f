"""Running the real desktop app (`python -m app.launcher`) in a subprocess with a scratch home.

    with running_app(app_env(tmp_path, display=server.display)) as app:
        ...  # app.pid, app.send_signal(signal.SIGTERM), app.wait(30)

The app starts with no model (`llm.url` none), no keyring (keyring's failing backend, unless a
test names another) and HOME and the Chamberlain home under the test's folder. It is stopped by
its PID when the block ends, killed if it does not end, and never left running.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def app_env(root: Path, *, display: str | None = None, **overrides: str) -> dict[str, str]:
    """The environment of an app started as a person would, with everything under `root`:
    HOME is root/user, the Chamberlain home root/home. `display` is an X display (Xvfb) to show
    the windows on; without one the app runs offscreen. `overrides` are further variables."""
    user, home, runtime = root / "user", root / "home", root / "runtime"
    user.mkdir(exist_ok=True)
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(user),
        "XDG_RUNTIME_DIR": str(runtime),
        "CHAMBERLAIN_HOME": str(home),
        "CHAMBERLAIN_LLM__URL": "none",
        "CHAMBERLAIN_LLM__EMBEDDED_FALLBACK": "false",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONPATH": str(REPO),
    }
    if display is None:
        env["QT_QPA_PLATFORM"] = "offscreen"
    else:
        env["QT_QPA_PLATFORM"] = "xcb"
        env["DISPLAY"] = display
    env.update(overrides)
    return env


@contextmanager
def running_app(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    """The desktop app, started with `env` (see app_env) and `args`; its stderr is piped (read
    it once it has ended). Ended by its PID afterwards: SIGTERM, then SIGKILL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app.launcher", *args],
        env=env,
        cwd=env["HOME"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if process.stderr is not None:
            process.stderr.close()
