"""Programs that run code they are given: shells, interpreters, awk, `find -exec`.

A shell or an interpreter may only run an existing script file: code on its command line
(`python -c`, `perl -e`, `bash -c`) or read from its input is refused, and so are an awk program
that runs commands and `find -exec`. `code_consumer` and `FETCHERS` let the assessment refuse
fetch-and-run (`curl … | sh`).

This module must never run anything, and never accept program text it cannot see on the line;
the only thing it looks at on disk is whether a script operand is a file.
"""

from __future__ import annotations

import re

from tools.commands.grammar import refuse
from tools.commands.kinds import STDIN_NAMES
from tools.commands.options import long_matches, short_cluster
from tools.commands.paths import RuleContext, resolve
from tools.commands.wrappers import Invocation

_SHELLS = frozenset(
    {
        "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "lksh", "yash",
        "ash", "rbash", "fish", "csh", "tcsh", "elvish", "nu", "xonsh", "posh", "rc", "es",
        "ion", "cmd", "pwsh", "powershell",
    }
)  # fmt: skip
_INTERPRETER_RE = re.compile(
    r"(?P<family>python|pypy|ipython|jython|perl|ruby|irb|node|nodejs|deno|bun|tsx|ts-node|php|"
    r"lua|luajit|rscript|r|julia|tclsh|wish|osascript|groovy|scala|jshell|guile|racket|sbcl|"
    r"clisp|ghci|runghc|erl|escript|elixir|iex|swift|kotlin|java)[0-9.]*(-dbg)?"
)
# Short option letters that put program text on the command line, per interpreter family.
_CODE_LETTERS: dict[str, str] = {
    "python": "c", "pypy": "c", "ipython": "c", "jython": "c", "perl": "eE", "ruby": "e",
    "irb": "", "node": "ep", "nodejs": "ep", "deno": "", "bun": "e", "tsx": "ep",
    "ts-node": "ep", "php": "rRBEF", "lua": "e", "luajit": "e", "rscript": "e", "r": "e",
    "julia": "eE", "osascript": "e", "groovy": "e", "scala": "e", "guile": "c",
    "racket": "e", "sbcl": "", "clisp": "x", "ghci": "e", "runghc": "", "erl": "",
    "escript": "", "elixir": "e", "iex": "", "swift": "e", "kotlin": "", "java": "",
    "tclsh": "", "wish": "", "jshell": "",
}  # fmt: skip
_CODE_LONG = ("eval", "print", "expr", "command", "execute", "exec", "eval-command", "source")
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
# Programs that fetch from the network: their output piped into a code consumer is fetch-and-run.
FETCHERS = frozenset(
    {
        "curl", "wget", "wget2", "fetch", "aria2c", "http", "https", "httpie", "xh", "lwp-request",
        "nc", "ncat", "netcat", "socat", "ftp", "tftp", "lftp", "ssh", "telnet",
    }
)  # fmt: skip


def _script_operand(
    inv: Invocation, ctx: RuleContext, code_letters: str, *, module_flag: bool = False
) -> str | None:
    """Refuse code on the command line; return the script file the program runs, if any.

    The script is the first argument that is an existing regular file: everything before it
    is checked for code options, so `perl -I lib -e CODE` is caught whatever -I takes.
    """
    for arg in inv.args:
        if arg in STDIN_NAMES:
            raise refuse(f"`{inv.name} {arg}` reads its program from standard input")
        cluster = short_cluster(arg)
        lowered = arg.lower()
        if inv.name in ("pwsh", "powershell") and lowered.startswith(("-c", "-e", "/c", "-f")):
            raise refuse(f"`{inv.name} {arg}` runs code given on the command line")
        if inv.name == "cmd" and lowered in ("/c", "/k", "/r"):
            raise refuse(f"`cmd {arg}` runs a command line through cmd.exe")
        if cluster and any(letter in cluster for letter in code_letters):
            raise refuse(
                f"`{inv.name} {arg}` runs code given on the command line, which the rules "
                "cannot check; save it to a file and run that, or run the program directly"
            )
        if long_matches(arg, _CODE_LONG) or arg in ("--command", "-command", "--init-command"):
            raise refuse(f"`{inv.name} {arg}` runs code given on the command line")
        if module_flag and arg.startswith("-m"):
            return arg
        if arg.startswith("-") or arg.startswith("+"):
            continue
        path = resolve(arg, ctx)
        if path is not None and path.is_file():
            return arg
    return None


def check_code_runner(inv: Invocation, ctx: RuleContext) -> None:
    if inv.name in _SHELLS:
        letters = "c" if inv.name not in ("cmd", "pwsh", "powershell") else ""
        if inv.name == "fish":
            letters = "cC"
        if inv.name in ("bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "rbash"):
            letters = "cs"
        script = _script_operand(inv, ctx, letters)
        if script is None:
            raise refuse(
                f"`{inv.name}` without an existing script file would read commands from its "
                "input or run a shell; Chamberlain runs programs directly"
            )
        return
    match = _INTERPRETER_RE.fullmatch(inv.name)
    if match is not None:
        family = match.group("family")
        if family == "deno" and inv.args[:1] == ("eval",):
            raise refuse("`deno eval` runs code given on the command line")
        script = _script_operand(
            inv, ctx, _CODE_LETTERS.get(family, "ce"), module_flag=family in ("python", "pypy")
        )
        if script is None and family not in ("java", "kotlin", "swift", "racket", "sbcl"):
            raise refuse(
                f"`{inv.name}` without an existing script file would read its program from its "
                "input"
            )
        return
    if inv.name in _AWKS:
        _check_awk(inv)
    if inv.name == "find":
        for arg in inv.args:
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                raise refuse(
                    f"`find {arg}` runs another program for every file, which the rules cannot "
                    "check; list the files first, then run that program on them"
                )


def _check_awk(inv: Invocation) -> None:
    texts: list[str] = []
    args = list(inv.args)
    has_file = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-f", "--file") or arg.startswith("--file="):
            has_file = True
        if arg in ("-e", "--source"):
            if i + 1 < len(args):
                texts.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("--source="):
            texts.append(arg.split("=", 1)[1])
        if arg in ("-F", "-v", "-f", "-i", "-l", "-E", "--file", "--include", "--load"):
            i += 2
            continue
        if not arg.startswith("-") or arg == "-":
            if not has_file and not texts:
                texts.append(arg)
            break
        i += 1
    for text in texts:
        if re.search(r"\bsystem\s*\(|\|\s*\"|\"\s*\||\|&|@load|\bgetline\b", text):
            raise refuse(
                "the awk program runs commands (system(), pipes or getline), which the rules "
                "cannot check"
            )


def code_consumer(inv: Invocation) -> bool:
    """A shell or an interpreter: a program that runs the program text it is given."""
    return inv.name in _SHELLS or bool(_INTERPRETER_RE.fullmatch(inv.name))
