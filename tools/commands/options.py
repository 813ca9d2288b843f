"""Reading a program's options the way GNU getopt does, conservatively.

Clusters (`-rf`), `--long` names and their abbreviations (`--rec` is `--recursive`), options after
operands (GNU permutes), and `--` ending the options. Used by the command rules and by the
classification of commands that run code or use the network. It never guesses in a program's
favour: a reading that could be an option is taken as one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def program_name(word: str) -> str:
    """`/usr/bin/RM.exe` -> `rm`: what the rules match on."""
    name = word.rsplit("/", 1)[-1].lower()
    if name.endswith(".exe"):
        name = name[:-4]
    return name


def long_matches(arg: str, names: Iterable[str]) -> bool:
    """`--rec`, `--recursive`, `--recursive=x` all name `recursive` (getopt takes prefixes)."""
    if not arg.startswith("--") or arg == "--":
        return False
    given = arg[2:].split("=", 1)[0]
    return bool(given) and any(name.startswith(given) for name in names)


def short_cluster(arg: str) -> str:
    """The letters of a short-option cluster (`-rf` -> `rf`), or '' for anything else."""
    if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1:
        return arg[1:]
    return ""


def options_and_operands(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Options anywhere before `--` (GNU permutes), everything else an operand."""
    options: list[str] = []
    operands: list[str] = []
    ended = False
    for arg in args:
        if ended:
            operands.append(arg)
        elif arg == "--":
            ended = True
        elif arg.startswith("-") and arg != "-":
            options.append(arg)
        else:
            operands.append(arg)
    return options, operands


def has_flag(options: Sequence[str], short: str, long: Sequence[str]) -> bool:
    for option in options:
        if long_matches(option, long):
            return True
        cluster = short_cluster(option)
        if cluster and any(letter in cluster for letter in short):
            return True
    return False
