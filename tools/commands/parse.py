"""`parse_command`: the argv of each stage of the one command or pipeline a line holds.

The line's characters are checked (`characters`), its structure read (`grammar`) and each word
unquoted (`words`); then `exec` and `command` prefixes are stripped, each program name must be
written as it runs (`'r''m'` is refused, not read as `rm`), and shell builtins and keywords are
refused: no shell runs. `argv_text` is the normalised form a target and a prompt show.

This module must never run or expand anything, and never return an argv for a line it cannot
account for byte by byte.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from tools.commands.characters import check_argument_characters, check_line_characters
from tools.commands.grammar import (
    Span,
    check_coverage,
    parse_tree,
    refuse,
    stage_nodes,
    stage_words,
)
from tools.commands.words import check_program, decode_word
from tools.manual import ToolError

MAX_COMMAND_CHARS = 4096

SHELL_ONLY = frozenset(
    {
        ".", "source", "eval", "cd", "export", "alias", "unalias", "set", "unset", "exit",
        "return", "trap", "ulimit", "umask", "declare", "local", "readonly", "typeset", "shopt",
        "bind", "history", "fc", "jobs", "fg", "bg", "wait", "disown", "suspend", "let", "hash",
        "getopts", "shift", "times", "enable", "mapfile", "readarray", "read", "pushd", "popd",
        "dirs", "coproc", "builtin", "caller", "compgen", "complete", "compopt", "logout",
        "function", "select", "until", "do", "done", "then", "fi", "esac", "in", "{", "}",
        "[[", "]]",
    }
)  # fmt: skip


def strip_stage_prefix(argv: list[str]) -> list[str]:
    """`exec` and `command` at the start of a command only say "run this program" in bash."""
    while argv and argv[0] in ("exec", "command"):
        head, rest = argv[0], argv[1:]
        while rest and rest[0].startswith("-") and rest[0] != "-":
            option = rest[0]
            if option == "--":
                rest = rest[1:]
                break
            if head == "command" and option == "-p":
                rest = rest[1:]
                continue
            if head == "command" and option in ("-v", "-V"):
                raise refuse("`command -v` is a shell query; use `which` instead")
            raise refuse(f"`{head} {option}` changes how the program is started")
        if not rest:
            raise refuse(f"`{head}` with no program to run")
        argv = rest
    return argv


def parse_command(command_line: str, *, home: Path | None = None) -> list[list[str]]:
    """The argv of each stage of the one command or pipeline `command_line` holds.

    Raises ToolRefused (with the reason) for everything that is not one simple command or a
    pipeline of simple commands, and ToolError for an empty line. `~` alone or before `/` is
    the user's home (`home`, by default the real one). Nothing is expanded or run.
    """
    return [
        [decoded for _, decoded in stage] for stage in parse_command_words(command_line, home=home)
    ]


def parse_command_words(
    command_line: str, *, home: Path | None = None
) -> list[list[tuple[str, str]]]:
    """Like `parse_command`, with each argument's spelling in the line beside its value."""
    if not isinstance(command_line, str):
        raise ToolError("the command must be text")
    if len(command_line) > MAX_COMMAND_CHARS:
        raise refuse(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    if not command_line.strip(" \t"):
        raise ToolError("the command is empty; say which program to run")
    check_line_characters(command_line)
    home_text = os.fspath(home) if home is not None else os.path.expanduser("~")

    source = command_line.encode("utf-8")
    tree = parse_tree(source)
    nodes = stage_nodes(tree.root_node)
    spans: list[Span] = []
    stages: list[list[tuple[str, str]]] = []
    pipe_tokens = [c for c in tree.root_node.named_children[0].children if c.type == "|"]
    spans.extend(Span(t.start_byte, t.end_byte) for t in pipe_tokens)
    for node in nodes:
        words: list[tuple[str, str]] = []
        for word in stage_words(node):
            spans.append(Span(word.start_byte, word.end_byte))
            text = source[word.start_byte : word.end_byte].decode("utf-8")
            words.append((text, decode_word(text, home_text)))
        stages.append(words)
    check_coverage(source, spans)

    result: list[list[tuple[str, str]]] = []
    for words in stages:
        argv = strip_stage_prefix([decoded for _, decoded in words])
        words = words[len(words) - len(argv) :]
        for index, arg in enumerate(argv):
            check_argument_characters(arg, index)
        check_program(argv[0])
        check_spelling(words[0][0], argv[0])
        if argv[0] in SHELL_ONLY:
            raise refuse(
                f"`{argv[0]}` is a shell builtin or keyword; Chamberlain runs programs without a "
                "shell"
            )
        result.append(words)
    return result


def check_spelling(spelled: str, program: str) -> None:
    """The program must be written as it runs: no quotes or escapes that a reader must decode.

    `$'\\x74ouch' FILE` runs `touch`, and `'r''m'` runs `rm`: the prompt shows the decoded name,
    but the line the user or the model wrote hid it.
    """
    if spelled == program or (spelled.startswith("~/") and program.endswith(spelled[1:])):
        return
    raise refuse(
        f"the program name is written as {spelled!r}, with quotes or escapes that hide what "
        f"it runs ({program!r}); write the program name plainly"
    )


def argv_text(stages: Sequence[Sequence[str]]) -> str:
    """The normalised form a target and a prompt show: shlex-quoted, ` | ` between stages."""
    return " | ".join(shlex.join(stage) for stage in stages)
