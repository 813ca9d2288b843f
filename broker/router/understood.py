"""Saying what was understood: for a command the router read but will not run directly, the
reply's words and the exact message that would run it; for an unsure reading nobody refined, what
it was taken as, what else it might have been, and how to ask for that plainly.

This module must never offer a line that does not route back, as a direct action, to exactly the
command it names (`_confirm_line` checks each one through `route_heuristic`), nor suggest words
that do not route to the reading it names (tests/broker/test_understood_reading.py checks each).
"""

from __future__ import annotations

from pathlib import Path

from broker.router.classifier import _classifier
from broker.router.extraction import _folder, _make_view
from broker.router.heuristic import route_heuristic, route_rules
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


# Each reading in a few words, and how to ask for it so that nobody has to guess.
READINGS: dict[Intent, str] = {
    Intent.CHAT_ONLY: "a question for me to answer from what I know",
    Intent.LOOKUP_SEARCH: "a web search",
    Intent.BROWSE_ONCE: "a request to read one web page",
    Intent.ONE_SHOT_DISCOVERY: "a request to look into this computer",
    Intent.SCREEN_OBSERVE: "a request to look at your screen",
    Intent.FILE_TASK: "a request about your files",
    Intent.SYSTEM_TASK: "a request to run something on this computer",
    Intent.MEMORY_READ: "a question about what I remember",
    Intent.MEMORY_WRITE: "something to remember",
}
ASK_PLAINLY: dict[Intent, str] = {
    Intent.CHAT_ONLY: "start with /chat to just talk",
    Intent.LOOKUP_SEARCH: 'say "search for …" to look it up',
    Intent.BROWSE_ONCE: "give the page's address (https://…) to read it",
    Intent.ONE_SHOT_DISCOVERY: 'name what to look into, e.g. "why is my disk full"',
    Intent.SCREEN_OBSERVE: 'say "what\'s on my screen" or start with /screen',
    Intent.FILE_TASK: 'name the file or folder, e.g. "list files in ~/Documents"',
    Intent.SYSTEM_TASK: "write the command in backticks, e.g. run `df -h`",
    Intent.MEMORY_READ: 'ask "what do you remember about …" or start with /recall',
    Intent.MEMORY_WRITE: 'say "remember that …"',
}
# Another reading is worth naming only when the classifier gives it at least this much.
ALTERNATIVE_FLOOR = 0.15


def understood_reading(router: RouterOutput, *, weights: Path | None = None) -> str | None:
    """For a reading neither sure nor refined by a model: "I took this as a web search, not a
    question for me to answer from what I know — start with /chat to just talk." None when
    no other reading has real weight (the rules' own reading, or the classifier's runner-up at
    `ALTERNATIVE_FLOOR` or more).

    The caller decides when the reading is unsure; this says what else it might have been.
    `weights`: the classifier's weight file, None for the shipped one.
    """
    if router.source not in ("heuristic", "classifier") or not router.text.strip():
        return None
    alternative: Intent | None = None
    rules = route_rules(router.text)
    if rules.intent is not router.intent:
        alternative = rules.intent
    elif (classifier := _classifier(weights)) is not None:
        ranked = classifier.predict(router.text.strip()).ranked
        alternative = next(
            (
                intent
                for intent, probability in ranked
                if intent is not router.intent and probability >= ALTERNATIVE_FLOOR
            ),
            None,
        )
    if alternative is None:
        return None
    taken = "research on the web" if router.research else READINGS[router.intent]
    return f"I took this as {taken}, not {READINGS[alternative]} — {ASK_PLAINLY[alternative]}."
