"""Saying what was understood: for a command the router read but will not run directly, the
reply's words and the exact message that would run it.

This module must never offer a line that does not route back, as a direct action, to exactly the
command it names (`_confirm_line` checks each one through `route_heuristic`).
"""

from __future__ import annotations

from broker.router.extraction import _folder, _make_view
from broker.router.heuristic import route_heuristic
from broker.router.patterns import _BARE_FOLDER_RE
from broker.types import Intent, RouterOutput


def understood_command(router: RouterOutput) -> str | None:
    """For a command the router read but will not run directly: what it understood, and the
    exact message that runs it. None when there is no such command.

    Without a model nobody can settle "run npm install in frontend" or "`df -h` and `free -m`";
    this is what the reply says instead of guessing.
    """
    if router.intent is not Intent.SYSTEM_TASK or router.arguments.action is not None:
        return None
    args = router.arguments
    if args.command:
        line = _confirm_line(args.command, args.cwd)
        if line is None:
            return None
        where = f" in {_plain_folder(args.cwd)}" if args.cwd else ""
        return (
            f"I understood the command `{args.command}`{where}, but I only run a command "
            f"straight away when the message says it unambiguously. To run it, send: {line}"
        )
    view = _make_view(router.text)
    if len(view.commands) > 1:
        shown = ", ".join(f"`{c}`" for c in view.commands)
        line = _confirm_line(view.commands[0], None)
        example = f", e.g. {line}" if line else ""
        return (
            f"I found {len(view.commands)} commands ({shown}) and ran none of them: I run one "
            f"command per message. Send each on its own{example}"
        )
    return None


def _plain_folder(cwd: str) -> str:
    """A folder as a message that routes it plainly: a bare name becomes `./name`."""
    if _folder(cwd) == (cwd, True):
        return cwd
    if _BARE_FOLDER_RE.fullmatch(cwd):
        return "./" + cwd
    return '"' + cwd + '"' if '"' not in cwd else cwd


def _confirm_line(command: str, cwd: str | None) -> str | None:
    """`run `<command>` in <folder>`: a message that routes to exactly this as a direct action."""
    if "`" in command or "\n" in command:
        return None
    line = f"run `{command}`"
    if cwd:
        line += f" in {_plain_folder(cwd)}"
    check = route_heuristic(line)
    if check.arguments.action != "run_command" or check.arguments.command != command:
        return None
    return line
