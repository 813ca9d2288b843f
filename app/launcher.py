"""The `chamberlain` command: the desktop app with no command, the headless CLI with one.

Kept apart from `app.cli` so that the CLI never imports Qt (an import contract checks it): only
this module chooses, and it imports the app's Qt side only when the app is what was asked for.
It must never hand the app to Qt where there is no graphical session: Qt would abort (a core
dump) with advice that does not apply; it says so in one sentence and exits 2 instead.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Mapping, Sequence

# Arguments that mean "start the desktop app" rather than a CLI command.
APP_FLAGS = ("--smoke-test", "--ready-and-quit", "--chat")
# The desktop app could not start here (no graphical session): a usage error, as the CLI has it.
EXIT_NO_DISPLAY = 2
# A local X display: ":0", ":1.0", "unix:0".
_LOCAL_X_DISPLAY = re.compile(r"(?:unix)?:(\d+)(?:\.\d+)?")

NO_DISPLAY_ADVICE = (
    "from a terminal, `chamberlain ask TEXT` answers a request, `chamberlain doctor` shows what "
    "works here, and `chamberlain --smoke-test` tries the desktop app offscreen"
)


def wants_app(argv: Sequence[str]) -> bool:
    """No command at all (options like --home aside), or an app-only flag."""
    if any(arg in APP_FLAGS for arg in argv):
        return True
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--home":
            if rest:
                rest.pop(0)
            continue
        if arg.startswith("--home="):
            continue
        return False
    return True


def no_display(environ: Mapping[str, str], platform: str = sys.platform) -> str | None:
    """Why the desktop app cannot open a window here, in words; None when it can, or when it is
    Qt's to find out (Windows and macOS always have a session; a platform asked for by name in
    QT_QPA_PLATFORM is used as asked).

    Checked before Qt is loaded: Qt without a display aborts the process (SIGABRT, a core dump)
    after suggesting a reinstall and a package that is already installed.
    """
    if not platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return None
    x11, wayland = environ.get("DISPLAY", ""), environ.get("WAYLAND_DISPLAY", "")
    asked = environ.get("QT_QPA_PLATFORM", "").strip()
    if asked:
        for choice in asked.split(";"):
            name = choice.split(":", 1)[0].strip().lower()
            if name == "xcb" and not x11:
                continue
            if name.startswith("wayland") and not wayland:
                continue
            if name == "xcb" and (problem := _x_server_missing(x11)) is not None:
                return problem
            return None
        return (
            f"QT_QPA_PLATFORM={asked} needs a graphical session, and there is none here "
            "(DISPLAY and WAYLAND_DISPLAY are unset)"
        )
    if wayland:
        return None
    if x11:
        return _x_server_missing(x11)
    return "there is no graphical session here (DISPLAY and WAYLAND_DISPLAY are unset)"


def _x_server_missing(display: str) -> str | None:
    """For a local X display, whether an X server listens on it (Linux listens on an abstract
    socket and on /tmp/.X11-unix/X<n>); None when one does, or when it is not a local display
    (Qt then finds out, and says what it found)."""
    match = _LOCAL_X_DISPLAY.fullmatch(display.strip())
    if match is None:
        return None
    path = f"/tmp/.X11-unix/X{match.group(1)}"
    for address in ("\0" + path, path):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(address)
            except OSError:
                continue
            return None
    return f"no graphical session answers at DISPLAY={display} (no X server listens there)"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--mcp-supervise"]:
        # An MCP server's supervisor (tools/mcp/supervise.py) where bubblewrap cannot give it a
        # PID namespace, as the installed bundle starts it. Standard library only.
        from tools.mcp.supervise import main as supervise

        supervise(["supervise", *args[1:]])
        return 0
    if args[:1] == ["--llm-worker"]:
        # The embedded model's worker process (broker/llm/worker.py), as the installed bundle
        # starts it: the bundle's executable is the only interpreter there is.
        from broker.llm.worker import main as worker_main

        return worker_main(args[1:])
    if args in (["--version"], ["-V"]):
        from app.version import version

        print(f"chamberlain {version()}")
        return 0
    if wants_app(args):
        # The smoke test runs offscreen unless told otherwise (app.main); it needs no display.
        problem = None if "--smoke-test" in args else no_display(os.environ)
        if problem is not None:
            sys.stderr.write(
                f"chamberlain: the desktop app cannot start: {problem}; {NO_DISPLAY_ADVICE}.\n"
            )
            return EXIT_NO_DISPLAY
        from app.main import run_app

        return run_app(args)
    from app.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
