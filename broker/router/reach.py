"""What a message gives signs of, and so what a reading of it may reach for.

Running commands, touching files, reading the screen and writing memory each need a sign in the
user's own words, as the heuristics read them; web lookups and plain chat need none.
`_unseen_reach` names what a reading the rules did not make (a model's verdict, an unsure
classifier's guess) reaches for without such a sign, and the caller keeps the rules' reading.

This module must never count the reading being checked as a sign: signs come from the message and
the rules' reading (`base`) only.
"""

from __future__ import annotations

import re

from broker.router.extraction import _make_view, _pattern, _topics, _View
from broker.router.patterns import (
    _FILE_DOMAIN_RE,
    _FILE_NOUN_RE,
    _I,
    _MACHINE_FACT_RE,
    _NOT_A_COMMAND,
    _PERSONAL_DOC_RE,
    _SCREEN_RE,
    _SYSTEM_DOMAIN_RE,
    KEEP_SIGN_RE,
)
from broker.router.rules import _discovery, _memory_write, _system_verb
from broker.router.verdict import _ModelVerdict
from broker.types import Intent, RouterOutput

# What refinement may not add on the model's word alone: the capabilities that run or touch
# something on this machine. Each needs a sign in the user's own words, as the heuristics read
# them; web lookups and plain chat need none (that is most of what refinement is for).
_SCREEN_WORD_RE = re.compile(
    r"\b(?:screens?|screenshots?|windows?|dialog(?:ue)?s?|pop-?ups?|display|monitor|desktop)\b",
    _I,
)
# A verb that runs something, anywhere in the message ("could you maybe restart the audio
# service"); the word after it rules out "run me through", "run errands".
_COMMAND_WORD_RE = re.compile(
    r"\b(?:run|execute|exec|restart|reboot|kill|killall|pkill|install|uninstall|upgrade|launch|"
    r"mount|unmount|umount|shut\s*down)\s+(?P<next>\S+)",
    _I,
)


def _system_signal(base: RouterOutput, view: _View) -> bool:
    """The heuristics saw a command or a question about this machine."""
    if base.intent is Intent.SYSTEM_TASK or base.needs_system_execute:
        return True
    if view.command is not None or view.run_task or _system_verb(view) is not None:
        return True
    if any(
        m.group("next").lower() not in _NOT_A_COMMAND for m in _COMMAND_WORD_RE.finditer(view.text)
    ):
        return True
    if _topics(view.text) or _MACHINE_FACT_RE.search(view.text):
        return True
    return _discovery(view) is not None and _SYSTEM_DOMAIN_RE.search(view.text) is not None


def _file_signal(base: RouterOutput, view: _View) -> bool:
    """The heuristics saw a path, a folder, or the user's files."""
    if base.intent is Intent.FILE_TASK or base.needs_file_access:
        return True
    return bool(
        view.paths
        or view.folder_paths
        or _FILE_DOMAIN_RE.search(view.text)
        or _FILE_NOUN_RE.search(view.text)
        or _PERSONAL_DOC_RE.match(view.text)
        or _pattern(view.text)
    )


def _screen_signal(base: RouterOutput, view: _View) -> bool:
    if base.intent is Intent.SCREEN_OBSERVE or base.needs_screen_read:
        return True
    return bool(_SCREEN_RE.search(view.text) or _SCREEN_WORD_RE.search(view.text))


def _memory_signal(base: RouterOutput, view: _View) -> bool:
    if base.intent is Intent.MEMORY_WRITE or base.needs_memory_write:
        return True
    return _memory_write(view) is not None or KEEP_SIGN_RE.search(view.text) is not None


def _unseen_reach(
    base: RouterOutput, text: str, verdict: _ModelVerdict | RouterOutput
) -> str | None:
    """What the verdict reaches for that the message gives no sign of, or None."""
    view = _make_view(text)
    intent = verdict.intent
    if (intent is Intent.SYSTEM_TASK or verdict.needs_system_execute) and not _system_signal(
        base, view
    ):
        return "command execution"
    if (intent is Intent.FILE_TASK or verdict.needs_file_access) and not _file_signal(base, view):
        return "file access"
    if intent is Intent.ONE_SHOT_DISCOVERY and not (
        _file_signal(base, view) or _system_signal(base, view)
    ):
        return "looking around this machine"
    if (intent is Intent.SCREEN_OBSERVE or verdict.needs_screen_read) and not _screen_signal(
        base, view
    ):
        return "screen reading"
    if (intent is Intent.MEMORY_WRITE or verdict.needs_memory_write) and not _memory_signal(
        base, view
    ):
        return "memory writing"
    return None
