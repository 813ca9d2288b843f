"""`chamberlain settings pending|confirm|discard`: changes made outside Chamberlain to its sealed
settings (broker.settings_seal), listed in full, then confirmed or put back.

`pending` lists each change with everything it would do (a server's whole command line);
`confirm [KEY…]` seals the file's values so they are used from the next start of any
Chamberlain; `discard [KEY…]` puts the values in use back into settings.json, keeping every
other setting the file holds. On a terminal both ask first (`--yes` does not).

Plain Python: the headless CLI imports this, so it must never import Qt. It never confirms a
change it did not list first, and never writes settings.json except to discard.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from app.errors import FrontEnd, user_message
from app.terminal import json_text

_WHAT_TO_DO = (
    "`chamberlain settings confirm` uses them from now on; `chamberlain settings discard` puts "
    "the values in use back into settings.json (add a KEY to choose one)"
)


def add_settings_parser(sub: Any, common: argparse.ArgumentParser, parser_class: Any) -> Any:
    st = sub.add_parser(
        "settings",
        parents=[common],
        help="changes made outside Chamberlain to settings that widen its reach: list, confirm",
    )
    ssub = st.add_subparsers(dest="settings_cmd", required=True, parser_class=parser_class)
    ssub.add_parser(
        "pending", parents=[common], help="what settings.json changed outside Chamberlain"
    )
    for name, what in (
        ("confirm", "use these changes from now on"),
        ("discard", "put the values in use back into settings.json"),
    ):
        cmd = ssub.add_parser(name, parents=[common], help=what)
        cmd.add_argument(
            "keys", nargs="*", metavar="KEY", help="e.g. mcp.servers.notes (default: all)"
        )
        cmd.add_argument("--yes", action="store_true", help="do not ask to confirm")
    return st


def cmd_settings(args: argparse.Namespace, home: Path) -> int:
    """Run one `settings` subcommand; the exit code (0 done, 1 failed or declined)."""
    from broker.settings import (
        SettingsError,
        confirm_pending,
        discard_pending,
        pending_changes,
    )

    as_json = bool(getattr(args, "json", False))
    try:
        loaded = pending_changes(home)
    except SettingsError as exc:
        sys.stderr.write(f"chamberlain: {user_message(exc, FrontEnd.CLI)}\n")
        return 1
    if loaded.seal_problem:
        sys.stderr.write(f"chamberlain: {loaded.seal_problem}\n")
    if args.settings_cmd == "pending":
        if as_json:
            _out(json_text([c.as_dict() for c in loaded.pending], indent=2))
        elif not loaded.pending:
            _out("Nothing waits for confirmation: settings.json holds only confirmed settings.")
        else:
            lines = ["settings.json was changed outside Chamberlain; these changes wait:"]
            lines += [f"  - {c.describe()}" for c in loaded.pending]
            lines.append(_WHAT_TO_DO + ".")
            _out("\n".join(lines))
        return 0
    keys = list(args.keys)
    chosen = [c for c in loaded.pending if not keys or c.key in keys]
    if not loaded.pending:
        _out("[]" if as_json else "Nothing waits for confirmation.")
        return 0
    verb = "Confirm" if args.settings_cmd == "confirm" else "Discard"
    if chosen and not args.yes and args.settings_cmd == "confirm" and not sys.stdin.isatty():
        # Nobody can be shown what would be confirmed: a script says so with --yes.
        sys.stderr.write(
            "chamberlain: settings confirm asks on a terminal; without one, give --yes after "
            "reading `chamberlain settings pending`. Nothing was changed.\n"
        )
        return 2
    if chosen and not args.yes and sys.stdin.isatty():
        listing = "\n".join(f"  - {c.describe()}" for c in chosen)
        sys.stderr.write(f"{listing}\n{verb} {_count(len(chosen))}? [y/N]: ")
        sys.stderr.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            sys.stderr.write("Nothing was changed.\n")
            return 1
    try:
        if args.settings_cmd == "confirm":
            done = confirm_pending(home, keys, shown=chosen)
        else:
            done = discard_pending(home, keys)
    except SettingsError as exc:
        sys.stderr.write(f"chamberlain: {user_message(exc, FrontEnd.CLI)}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(
            f"chamberlain: nothing was changed, because {home} could not be written "
            f"({exc.strerror or exc}); check that it is writable\n"
        )
        return 1
    if as_json:
        _out(json_text([c.as_dict() for c in done], indent=2))
    else:
        past = "Confirmed" if args.settings_cmd == "confirm" else "Discarded"
        lines = [f"{past}: {c.describe()}" for c in done]
        if args.settings_cmd == "confirm":
            lines.append(
                "They apply to the next command; a Chamberlain app already running uses them "
                "once restarted."
            )
        _out("\n".join(lines))
    return 0


def _count(n: int) -> str:
    return "this change" if n == 1 else f"these {n} changes"


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
