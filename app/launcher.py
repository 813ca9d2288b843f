"""The `chamberlain` command: the desktop app with no command, the headless CLI with one.

Kept apart from `app.cli` so that the CLI never imports Qt (an import contract checks it): only
this module chooses, and it imports the app's Qt side only when the app is what was asked for.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

# Arguments that mean "start the desktop app" rather than a CLI command.
APP_FLAGS = ("--smoke-test", "--ready-and-quit")


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


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        from app.version import version

        print(f"chamberlain {version()}")
        return 0
    if wants_app(args):
        from app.main import run_app

        return run_app(args)
    from app.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
