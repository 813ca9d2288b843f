"""Command lines: parse them with the real bash grammar, and decide what the rules say about them.

`parse_command` turns one line into the argv of each stage of a pipeline, exactly as it will be
executed; `assess_command` adds the rules: hard-deny (refused whatever the user says), read-only
(a session grant covers it), or anything else (asks once, showing the normalised argv).

How a line is read. tree-sitter-bash gives the structure; every node type other than a plain
command, a `|` pipeline and quoted or unquoted words is refused, with a reason naming the
construct (`;`, `&&`, `$( )`, redirections, assignments, …). Then every byte of the line must be
accounted for: each is inside a command word, a `|`, or a space or tab between them, so nothing
the grammar might have tolerated can slip past. Each word is then unquoted by this module's own
strict decoder, which refuses what it would have to expand: variables, globs (`*`, `?`, `[`),
braces, `~` anywhere but alone or before `/`. Quoted text is always literal, so
`find . -name '*.txt'` passes the pattern on to find.

Globs are refused rather than expanded: expanding them here would show the user one argv in the
prompt and run another if the folder changes in between, and passing them literally would
silently do something other than what a shell user meant. Quoting says "literally" explicitly.

Rules are matched on what the program will do, not on how the line is spelled: program names
are reduced to their base name (`/bin/rm`, `\\rm`, `'r''m'` are all `rm`); options are read the
way GNU getopt reads them (clusters, `--long` abbreviations, options after operands, `--`);
paths are resolved (`~`, `..`, symlinks) before they are compared; arguments are also checked in
their NFKC form, so `－rf` and `／` count as `-rf` and `/`; wrappers (`env`, `nice`, `timeout`,
`nohup`, `stdbuf`, `time`, `command`, `exec`, `busybox`) are unwrapped and the program inside is
checked too.

This module must never run anything, never expand anything a shell would expand, and never
accept a line it cannot account for byte by byte. When in doubt it refuses, or classifies a
command as one that asks: never as read-only.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import stat
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter
import tree_sitter_bash

from tools.command_kinds import runs_code, runs_piped_commands, uses_network
from tools.manual import Reversibility, ToolError, ToolRefused
from tools.netns import loopback_ports
from tools.options import has_flag as _has_flag
from tools.options import long_matches as _long_matches
from tools.options import options_and_operands as _options_and_operands
from tools.options import program_name as _program_name
from tools.options import short_cluster as _short_cluster
from tools.paths import is_within, resolve_path
from tools.private import PrivatePlaces, private_places
from tools.scopes import exact_command_scope

log = logging.getLogger("chamberlain.tools.commands")

MAX_COMMAND_CHARS = 4096
MAX_WRAPPER_DEPTH = 8

READONLY_PREFIX = "readonly:"
COMMAND_PREFIX = "command:"
CODE_PREFIX = "code:"


# --- characters ---------------------------------------------------------------------------------

# Characters that render as nothing (or as a blank) though they are not formatting characters
# by Unicode category: combining grapheme joiner, Hangul fillers, Khmer vowel inherents, Mongolian
# variation selectors, braille blank, variation selectors, musical-symbol formatting.
_INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0x1D159, 0x1D159),
    (0x1D173, 0x1D17A),
    (0xE0100, 0xE01EF),
)


def _is_invisible(code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in _INVISIBLE_RANGES)


def _char_problem(ch: str) -> str | None:
    """Why this character may not appear in a command line, or None."""
    if ch == " " or ch == "\t":
        return None
    code = ord(ch)
    category = unicodedata.category(ch)
    name = unicodedata.name(ch, "")
    label = f"U+{code:04X}" + (f" {name}" if name else "")
    if ch == "\x00":
        return "a NUL character (U+0000), which no program argument can hold"
    if category == "Cc":
        return f"a control character ({label})"
    if category == "Cf" or _is_invisible(code):
        return f"an invisible character ({label}) that can hide what the command really says"
    if category in ("Zs", "Zl", "Zp"):
        return f"a space that is not a plain space ({label})"
    if category == "Co":
        return f"a private-use character ({label})"
    if category == "Cs":
        return f"a lone surrogate ({label})"
    if category == "Cn":
        return f"an unassigned character ({label})"
    return None


def _check_line_characters(line: str) -> None:
    if "\\\n" in line or "\\\r\n" in line:
        raise ToolRefused(
            "refused: the command has a line continuation (backslash-newline), which can hide "
            "a second command; write it on one line"
        )
    if "\n" in line or "\r" in line:
        raise ToolRefused(
            "refused: the command spans more than one line, and a new line starts another "
            "command; run one command (or one pipeline) at a time"
        )
    for ch in line:
        problem = _char_problem(ch)
        if problem is not None:
            raise ToolRefused(f"refused: the command contains {problem}")


def _check_argument_characters(arg: str, index: int) -> None:
    for ch in arg:
        problem = _char_problem(ch)
        if problem is not None:
            where = "the program name" if index == 0 else f"argument {index}"
            raise ToolRefused(f"refused: {where} contains {problem}")


def _folded(arg: str) -> str:
    """The compatibility form: fullwidth and other look-alike letters become the plain ones."""
    return unicodedata.normalize("NFKC", arg)


# --- the grammar --------------------------------------------------------------------------------

_parser_lock = threading.Lock()
_parser: tree_sitter.Parser | None = None


def _parse_tree(source: bytes) -> tree_sitter.Tree:
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        return _parser.parse(source)


_HIDDEN_COMMAND = "runs a hidden command whose output becomes part of this one"
_NO_REDIRECT = (
    "output comes back to Chamberlain, and files are named as arguments (e.g. `sort -o FILE`)"
)
_NODE_REASONS: dict[str, str] = {
    "command_substitution": f"command substitution ($( ) or backticks) {_HIDDEN_COMMAND}",
    "process_substitution": f"process substitution (<( ) or >( )) {_HIDDEN_COMMAND}",
    "subshell": "a subshell ( … ) runs commands inside a shell; run the command itself",
    "compound_statement": "a command group { … } runs several commands",
    "redirected_statement": f"redirections (>, >>, <, 2>&1, &>) are not supported: {_NO_REDIRECT}",
    "file_redirect": f"redirections (>, >>, <, 2>&1, &>) are not supported: {_NO_REDIRECT}",
    "heredoc_redirect": "a here-document (<<) feeds hidden input to the command",
    "herestring_redirect": "a here-string (<<<) feeds hidden input to the command",
    "variable_assignment": (
        "a variable assignment (NAME=value) changes how the program behaves without showing it; "
        "Chamberlain does not set variables for commands"
    ),
    "variable_assignments": "variable assignments (NAME=value) are not supported",
    "simple_expansion": (
        "variable expansion ($NAME) is not done: Chamberlain runs no shell; write the value itself"
    ),
    "expansion": "variable expansion (${…}) is not done: Chamberlain runs no shell",
    "arithmetic_expansion": "arithmetic expansion $(( )) is not done: Chamberlain runs no shell",
    "brace_expression": "brace expansion ({a..b}, {x,y}) is not done; write each argument",
    "negated_command": "`!` negation is shell syntax; run the command itself",
    "function_definition": "defining a shell function is not supported",
    "if_statement": "control flow (if) needs a shell; run one command",
    "for_statement": "control flow (for) needs a shell; run one command",
    "c_style_for_statement": "control flow (for) needs a shell; run one command",
    "while_statement": "control flow (while/until) needs a shell; run one command",
    "case_statement": "control flow (case) needs a shell; run one command",
    "test_command": "a [[ ]] or [ ] test is shell syntax; run a program",
    "declaration_command": "declare/export/local/readonly/typeset are shell builtins",
    "unset_command": "unset is a shell builtin",
    "comment": "a comment (#) hides text from the command that runs; remove it",
    "translated_string": 'a $"…" locale string is shell syntax',
    "extglob_pattern": "extended glob patterns are not expanded",
    "array": "arrays are shell syntax",
    "heredoc_body": "a here-document (<<) feeds hidden input to the command",
}
_SEPARATOR_REASONS: dict[str, str] = {
    ";": "`;` runs a second command after the first; run one command (or a pipeline) at a time",
    "&": "`&` runs a command in the background, where nothing can time it out or show it",
    "&&": "`&&` chains a second command; run one command (or a pipeline) at a time",
    "||": "`||` chains a second command; run one command (or a pipeline) at a time",
    ";;": "`;;` is shell syntax",
    "|&": "`|&` also pipes error output (a redirection); use a plain `|`",
    "\n": "a new line starts another command",
}
_WORD_NODES = frozenset(
    {"word", "number", "raw_string", "string", "ansi_c_string", "concatenation"}
)


def _refuse(reason: str) -> ToolRefused:
    return ToolRefused(f"refused: {reason}")


def _first_forbidden(node: tree_sitter.Node) -> str | None:
    """The reason for the first construct (in source order, outermost first) that is refused."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.type == "ERROR":
            return "part of the command could not be read as a plain command"
        if current.is_missing:
            return "the command is incomplete (a quote or bracket is not closed)"
        if current.type == "list":
            ops = [c.type for c in current.children if not c.is_named]
            op = next((o for o in ops if o in _SEPARATOR_REASONS), "&&")
            return _SEPARATOR_REASONS[op]
        reason = _NODE_REASONS.get(current.type)
        if reason is not None:
            return reason
        stack.extend(reversed(current.children))
    return None


@dataclass(frozen=True)
class _Span:
    start: int
    end: int


def _stage_nodes(root: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The `command` nodes of the one command or pipeline the line holds; refuses the rest."""
    for child in root.children:
        if not child.is_named:
            raise _refuse(_SEPARATOR_REASONS.get(child.type, f"`{child.type}` is shell syntax"))
    reason = _first_forbidden(root)
    if reason is not None:
        raise _refuse(reason)
    statements = root.named_children
    if root.has_error:
        raise _refuse("part of the command could not be read as a plain command")
    if not statements:
        raise ToolError("the command is empty; say which program to run")
    if len(statements) > 1:
        raise _refuse("the line holds more than one command; run one at a time")
    top = statements[0]
    if top.type == "command":
        return [top]
    if top.type != "pipeline":
        raise _refuse(f"a `{top.type}` is shell syntax; run one command or a pipeline")
    stages: list[tree_sitter.Node] = []
    for child in top.children:
        if child.is_named:
            if child.type != "command":
                raise _refuse(f"a `{child.type}` inside a pipeline is shell syntax")
            stages.append(child)
        elif child.type != "|":
            raise _refuse(_SEPARATOR_REASONS.get(child.type, f"`{child.type}` is shell syntax"))
    return stages


def _stage_words(command: tree_sitter.Node) -> list[tree_sitter.Node]:
    words: list[tree_sitter.Node] = []
    for child in command.children:
        if not child.is_named:
            if child.type == "$":
                raise _refuse(
                    'a `$` expansion ($NAME, $"…" locale strings, $( )) is not done: Chamberlain '
                    "runs no shell"
                )
            raise _refuse(f"`{child.type}` is shell syntax that Chamberlain does not run")
        if child.type == "command_name":
            inner = child.named_children
            if len(inner) != 1 or inner[0].type not in _WORD_NODES or words:
                raise _refuse("the program name is not a plain word")
            words.append(child)
        elif child.type in _WORD_NODES:
            if not words:
                raise _refuse("the command has no program name")
            words.append(child)
        else:
            raise _refuse(_NODE_REASONS.get(child.type, f"a `{child.type}` is shell syntax"))
    if not words:
        raise _refuse("the command has no program name")
    return words


def _check_coverage(source: bytes, spans: list[_Span]) -> None:
    """Every byte is inside an accepted word or `|`, or is a space or tab between them."""
    position = 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < position:
            raise _refuse("the command could not be split into words unambiguously")
        gap = source[position : span.start]
        if gap.strip(b" \t"):
            raise _refuse(f"{gap.decode('utf-8', 'replace').strip()!r} is shell syntax")
        position = span.end
    if source[position:].strip(b" \t"):
        raise _refuse(f"{source[position:].decode('utf-8', 'replace').strip()!r} is shell syntax")


# --- words: quotes removed the way bash would, nothing expanded ---------------------------------

_UNQUOTED_REASONS: dict[str, str] = {
    "*": "globs (*) are not expanded; name the files, or quote the pattern ('*.txt') to pass it "
    "on literally",
    "?": "globs (?) are not expanded; quote the character to pass it on literally",
    "[": "globs ([…]) are not expanded; quote the brackets to pass them on literally",
    "{": "brace expansion ({…}) is not done; quote the braces to pass them on literally",
    "}": "brace expansion ({…}) is not done; quote the braces to pass them on literally",
    "`": "command substitution (backticks) runs a hidden command",
    ";": "`;` runs a second command",
    "&": "`&` is shell syntax",
    "|": "`|` in this position is shell syntax",
    "<": "redirections are not supported",
    ">": "redirections are not supported",
    "(": "parentheses are shell syntax; quote them to pass them on literally",
    ")": "parentheses are shell syntax; quote them to pass them on literally",
}
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_HEX = "0123456789abcdefABCDEF"


def _decode_double(text: str, i: int, out: list[str]) -> int:
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return i + 1
        if ch == "\\" and i + 1 < n and text[i + 1] in '$`"\\':
            out.append(text[i + 1])
            i += 2
            continue
        if ch == "$":
            raise _refuse("expansion ($…) inside double quotes is not done; use single quotes")
        if ch == "`":
            raise _refuse("command substitution (backticks) runs a hidden command")
        out.append(ch)
        i += 1
    raise _refuse("a double quote is not closed")


def _take(text: str, i: int, digits: str, most: int) -> tuple[str, int]:
    end = i
    while end < len(text) and end - i < most and text[end] in digits:
        end += 1
    return text[i:end], end


def _decode_ansi_c(text: str, i: int, out: list[str]) -> int:
    """$'…': the escapes bash decodes, except those that make raw bytes or control keys."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "'":
            return i + 1
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        esc = text[i + 1]
        i += 2
        if esc in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[esc])
            continue
        if esc in "xuU01234567":
            if esc in "01234567":
                digits, i = _take(text, i - 1, "01234567", 3)
                value = int(digits, 8)
            else:
                most = {"x": 2, "u": 4, "U": 8}[esc]
                digits, i = _take(text, i, _HEX, most)
                if not digits:
                    raise _refuse(f"the escape \\{esc} in $'…' has no digits")
                value = int(digits, 16)
            if esc in "x01234567" and value > 0x7F:
                raise _refuse("byte escapes above \\x7f in $'…' are not supported")
            if value > 0x10FFFF:
                raise _refuse("a \\U escape in $'…' is beyond Unicode")
            out.append(chr(value))
            continue
        if esc == "c":
            raise _refuse("control-key escapes (\\c) in $'…' are not supported")
        out.append("\\" + esc)
    raise _refuse("a $'…' quote is not closed")


def _decode_word(text: str, home: str) -> str:
    """One argument with its quotes removed; refuses anything bash would expand."""
    if text == "{}":
        return text  # literal in bash too (find's placeholder); no expansion without a comma
    out: list[str] = []
    i, n = 0, len(text)
    if text == "~" or text.startswith("~/"):
        out.append(home)
        i = 1
    while i < n:
        ch = text[i]
        if ch == "\\":
            if i + 1 >= n:
                raise _refuse("the command ends with a lone backslash")
            out.append(text[i + 1])
            i += 2
        elif ch == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise _refuse("a single quote is not closed")
            out.append(text[i + 1 : end])
            i = end + 1
        elif ch == '"':
            i = _decode_double(text, i + 1, out)
        elif ch == "$":
            if text.startswith("$'", i):
                i = _decode_ansi_c(text, i + 2, out)
            elif text.startswith('$"', i):
                raise _refuse('a $"…" locale string is shell syntax')
            else:
                raise _refuse(
                    "variable expansion ($NAME) is not done: Chamberlain runs no shell; "
                    "write the value itself"
                )
        elif ch == "~":
            raise _refuse(
                "`~` is only expanded on its own or before `/` (~/Documents); write the path "
                "in full or quote it"
            )
        elif ch == "#" and i == 0:
            raise _refuse(_NODE_REASONS["comment"])
        elif ch in _UNQUOTED_REASONS:
            raise _refuse(_UNQUOTED_REASONS[ch])
        else:
            out.append(ch)
            i += 1
    return "".join(out)


_PROGRAM_RE = re.compile(r"[A-Za-z0-9_.+@:/-]+")


def _check_program(word: str) -> None:
    if not word:
        raise _refuse("the program name is empty")
    if not word.isascii():
        raise _refuse(
            f"the program name {word!r} has characters outside plain ASCII, which can look like "
            "another program's name"
        )
    if word.startswith("-") or not _PROGRAM_RE.fullmatch(word):
        raise _refuse(f"{word!r} is not a program name Chamberlain will run")


# --- parse_command ------------------------------------------------------------------------------

_SHELL_ONLY = frozenset(
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


def _strip_stage_prefix(argv: list[str]) -> list[str]:
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
                raise _refuse("`command -v` is a shell query; use `which` instead")
            raise _refuse(f"`{head} {option}` changes how the program is started")
        if not rest:
            raise _refuse(f"`{head}` with no program to run")
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
        raise _refuse(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    if not command_line.strip(" \t"):
        raise ToolError("the command is empty; say which program to run")
    _check_line_characters(command_line)
    home_text = os.fspath(home) if home is not None else os.path.expanduser("~")

    source = command_line.encode("utf-8")
    tree = _parse_tree(source)
    stage_nodes = _stage_nodes(tree.root_node)
    spans: list[_Span] = []
    stages: list[list[tuple[str, str]]] = []
    pipe_tokens = [c for c in tree.root_node.named_children[0].children if c.type == "|"]
    spans.extend(_Span(t.start_byte, t.end_byte) for t in pipe_tokens)
    for node in stage_nodes:
        words: list[tuple[str, str]] = []
        for word in _stage_words(node):
            spans.append(_Span(word.start_byte, word.end_byte))
            text = source[word.start_byte : word.end_byte].decode("utf-8")
            words.append((text, _decode_word(text, home_text)))
        stages.append(words)
    _check_coverage(source, spans)

    result: list[list[tuple[str, str]]] = []
    for words in stages:
        argv = _strip_stage_prefix([decoded for _, decoded in words])
        words = words[len(words) - len(argv) :]
        for index, arg in enumerate(argv):
            _check_argument_characters(arg, index)
        _check_program(argv[0])
        _check_spelling(words[0][0], argv[0])
        if argv[0] in _SHELL_ONLY:
            raise _refuse(
                f"`{argv[0]}` is a shell builtin or keyword; Chamberlain runs programs without a "
                "shell"
            )
        result.append(words)
    return result


def _check_spelling(spelled: str, program: str) -> None:
    """The program must be written as it runs: no quotes or escapes that a reader must decode.

    `$'\\x74ouch' FILE` runs `touch`, and `'r''m'` runs `rm`: the prompt shows the decoded name,
    but the line the user or the model wrote hid it.
    """
    if spelled == program or (spelled.startswith("~/") and program.endswith(spelled[1:])):
        return
    raise _refuse(
        f"the program name is written as {spelled!r}, with quotes or escapes that hide what "
        f"it runs ({program!r}); write the program name plainly"
    )


def argv_text(stages: Sequence[Sequence[str]]) -> str:
    """The normalised form a target and a prompt show: shlex-quoted, ` | ` between stages."""
    return " | ".join(shlex.join(stage) for stage in stages)


# Option reading (GNU getopt, conservatively) lives in tools.options.


# --- paths --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleContext:
    """What the rules need to know about where a command runs."""

    cwd: Path
    home: Path
    # Resolved: the app's own grants, settings, audit and memory files (or their folder).
    protected: tuple[Path, ...] = ()
    private: PrivatePlaces | None = None
    own_pids: frozenset[int] = frozenset()


def _path_candidates(arg: str) -> list[str]:
    """The strings in `arg` a program might take as a path: itself, after `=`, after `-x`."""
    candidates = [arg]
    if "=" in arg:
        candidates.append(arg.split("=", 1)[1])
    if arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
        candidates.append(arg[2:])
        for index, ch in enumerate(arg[2:], start=2):
            if ch in "/~":
                candidates.append(arg[index:])
                break
    return [c for c in dict.fromkeys(candidates) if c and c != "-"]


def _resolve(candidate: str, ctx: RuleContext) -> Path | None:
    try:
        return resolve_path(candidate, home=ctx.home, cwd=ctx.cwd)
    except ValueError:
        return None


def _resolved_args(args: Iterable[str], ctx: RuleContext) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for arg in args:
        for candidate in _path_candidates(arg):
            path = _resolve(candidate, ctx)
            if path is not None:
                found.append((arg, path))
    return found


def _homes(ctx: RuleContext) -> list[Path]:
    homes = [ctx.home]
    try:
        real = Path(os.path.realpath(os.path.expanduser("~")))
    except (OSError, RuntimeError):
        return homes
    if real != ctx.home:
        homes.append(real)
    return homes


def _broad_literal(arg: str) -> str | None:
    """A literal glob, `..` or `$HOME` given to a deleting program (nothing expands them here)."""
    if arg in ("*", ".*", "./*", "*/", "~/*") or arg.endswith(("/*", "/.*")):
        return f"{arg!r} (a glob matching everything there)"
    if ".." in arg.replace("\\", "/").split("/"):
        return f"{arg!r} (a parent folder, ..)"
    if arg.startswith(("$HOME", "${HOME}")):
        return f"{arg!r} (your home folder)"
    return None


def _dangerous_path(path: Path, ctx: RuleContext) -> str | None:
    """Why deleting or re-permissioning `path` would wreck the system or the home, or None."""
    if path == Path(path.anchor):
        return "the root folder /"
    for home in _homes(ctx):
        if path == home:
            return f"your home folder ({home})"
        try:
            if is_within(home, path):
                return f"{path}, which contains your home folder"
        except ValueError:
            continue
    if len(path.parts) <= 2:
        return f"{path}, a top-level system folder"
    return None


def _is_disk_device(path: Path) -> bool:
    text = os.fspath(path)
    if not text.startswith("/dev/"):
        return False
    if re.match(
        r"/dev/(sd|hd|vd|xvd|nvme|mmcblk|md|dm-|loop|sr|nbd|zram|ram|mtd|ubi|rbd|bcache|"
        r"mapper/|disk/|block/|mem$|kmem$|port$)",
        text,
    ):
        return True
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _protected_hit(path: Path, ctx: RuleContext) -> tuple[Path, str] | None:
    """(protected path, how): `path` "is" it (or inside it, or a hard link to it), "holds" it
    (is the folder it lies in), or "contains" it further down."""
    file_id = _file_id(path) if ctx.protected else None
    for protected in ctx.protected:
        if file_id is not None and file_id == _file_id(protected):
            return protected, "is"
        try:
            if is_within(path, protected):
                return protected, "is"
            if path == protected.parent:
                return protected, "holds"
            if is_within(protected, path):
                return protected, "contains"
        except ValueError:
            continue
    return None


def _sensitive_hit(path: Path) -> str | None:
    text = os.fspath(path)
    if re.match(r"/proc/(\d+|self|thread-self)(/|$)", text):
        return f"{path} (another process's memory, environment or files)"
    if text.startswith("/dev/") and text not in ("/dev/null", "/dev/zero"):
        return f"{path} (a device)"
    return None


# /proc's links to other places: through them a path names what a process sees, not what the
# line says (`/proc/self/cwd/.ssh` is the command's own working folder's .ssh).
_PROC_LINK = re.compile(
    r"/proc/(\d+|self|thread-self)(/task/\d+)?/(cwd|root|fd|fdinfo|exe|map_files)(/|$)"
)


def _check_private(arg: str, path: Path, ctx: RuleContext) -> None:
    """Refuse an argument that leads into a private place or through a /proc link."""
    for candidate in _path_candidates(arg):
        if candidate.startswith("/") and _PROC_LINK.match(os.path.normpath(candidate)):
            raise _refuse(
                f"{arg!r} reaches files through a /proc link ({candidate}), which hides where "
                "they really are; name the file itself"
            )
    if ctx.private is None:
        return
    hit = ctx.private.hit(path)
    if hit is not None:
        raise _refuse(f"{arg!r}: {hit.describe()}; no command may read or change it")


# --- wrappers -----------------------------------------------------------------------------------

_ELEVATE = frozenset(
    {
        "sudo", "doas", "su", "pkexec", "run0", "sudoedit", "runuser", "gosu", "su-exec",
        "chroot", "nsenter", "unshare", "setpriv", "capsh", "sg", "newgrp", "calife", "ksu",
    }
)  # fmt: skip
# Programs that run other programs in ways the rules cannot follow (from input, from a string,
# later, detached, or under a tracer): refused; run the inner program directly instead.
_RUNS_OTHERS: dict[str, str] = {
    "xargs": "runs programs built from its input, which the rules cannot see",
    "parallel": "runs programs built from its input, which the rules cannot see",
    "watch": "runs its command through a shell",
    "script": "runs a shell",
    "setsid": "detaches its program from Chamberlain's control (it would survive the time limit)",
    "daemonize": "detaches its program from Chamberlain's control",
    "start-stop-daemon": "detaches its program from Chamberlain's control",
    "systemd-run": "hands its program to the service manager, outside Chamberlain's control",
    "at": "schedules a shell command for later",
    "batch": "schedules a shell command for later",
    "tmux": "runs a shell",
    "screen": "runs a shell",
    "byobu": "runs a shell",
    "expect": "runs a script of commands",
    "flock": "runs another program (possibly through a shell with -c)",
    "chrt": "runs another program",
    "taskset": "runs another program",
    "prlimit": "runs another program",
    "numactl": "runs another program",
    "cgexec": "runs another program",
    "strace": "runs another program under a tracer",
    "ltrace": "runs another program under a tracer",
    "gdb": "can run any program or shell command",
    "valgrind": "runs another program",
    "unbuffer": "runs another program",
    "faketime": "runs another program",
    "firejail": "runs another program",
    "bwrap": "runs another program",
    "proxychains": "runs another program",
    "proxychains4": "runs another program",
    "torsocks": "runs another program",
    "chronic": "runs another program",
    "systemd-inhibit": "runs another program",
    "dbus-run-session": "runs another program",
    "ssh-agent": "runs another program",
    "entr": "runs programs whenever files change",
    "find2perl": "writes programs",
}
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
_STDIN_NAMES = ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
_FETCHERS = frozenset(
    {
        "curl", "wget", "wget2", "fetch", "aria2c", "http", "https", "httpie", "xh", "lwp-request",
        "nc", "ncat", "netcat", "socat", "ftp", "tftp", "lftp", "ssh", "telnet",
    }
)  # fmt: skip


# Multi-call binaries: the first argument names the program they act as.
_MULTI_CALL = ("busybox", "toybox")


@dataclass(frozen=True)
class Invocation:
    """One program in a stage, after unwrapping: `nice -n 5 ls` is nice, then ls."""

    name: str
    argv: tuple[str, ...]
    wrapper: bool = False

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[1:]

    @property
    def written(self) -> str:
        return self.argv[0]


def _inner_after_options(
    name: str,
    args: Sequence[str],
    *,
    flags: Sequence[str] = (),
    valued: Sequence[str] = (),
    long_flags: Sequence[str] = (),
    long_valued: Sequence[str] = (),
    refused: dict[str, str] | None = None,
    numeric: bool = False,
) -> int | None:
    """Index in `args` where the wrapped command starts (None: there is none).

    Unknown options are refused: a wrapper option we do not understand could take the command
    as its value, or change what runs.
    """
    refused = refused or {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        for option, why in refused.items():
            if arg == option or (option.startswith("--") and _long_matches(arg, [option[2:]])):
                raise _refuse(f"`{name} {arg}` {why}")
            if not option.startswith("--") and arg.startswith(option) and len(option) == 2:
                raise _refuse(f"`{name} {arg}` {why}")
        if numeric and re.fullmatch(r"--?\d+", arg):
            i += 1
            continue
        if arg.startswith("--"):
            given = arg[2:].split("=", 1)[0]
            valued_hit = [n for n in long_valued if n.startswith(given)]
            flag_hit = [n for n in long_flags if n.startswith(given)]
            if given in long_valued or (valued_hit and not flag_hit):
                i += 1 if "=" in arg else 2
                continue
            if given in long_flags or (flag_hit and not valued_hit):
                i += 1
                continue
            raise _refuse(f"`{name} {arg}` is an option Chamberlain does not understand")
        letters = arg[1:]
        j = 0
        consumed_next = False
        while j < len(letters):
            letter = letters[j]
            if letter in valued:
                if j == len(letters) - 1:
                    consumed_next = True
                break
            if letter not in flags:
                raise _refuse(f"`{name} {arg}` is an option Chamberlain does not understand")
            j += 1
        i += 2 if consumed_next else 1
    if i >= len(args):
        return None
    return i


def _unwrap_once(inv_argv: Sequence[str]) -> tuple[Invocation, list[str] | None]:
    """The invocation itself, and the argv of the program it wraps (or None)."""
    name = _program_name(inv_argv[0])
    args = list(inv_argv[1:])
    inv = Invocation(name, tuple(inv_argv))
    start: int | None
    if name in _ELEVATE:
        raise _refuse(f"`{name}` runs a program as another user; Chamberlain never elevates")
    if name in _RUNS_OTHERS:
        raise _refuse(f"`{name}` {_RUNS_OTHERS[name]}; run the program itself instead")
    if name in _SHELL_ONLY:
        raise _refuse(f"`{name}` is a shell builtin; Chamberlain runs programs without a shell")
    if name == "env":
        start = _inner_after_options(
            name,
            args,
            flags="i0v",
            valued="u",
            long_flags=("ignore-environment", "null", "debug", "list-signal-handling"),
            long_valued=("unset",),
            refused={
                "-S": "splits a string into a hidden command",
                "--split-string": "splits a string into a hidden command",
                "-C": "changes the working folder outside the checked one",
                "--chdir": "changes the working folder outside the checked one",
                "-P": "changes where the program is looked up",
                "--block-signal": "changes signal handling",
                "--default-signal": "changes signal handling",
                "--ignore-signal": "changes signal handling",
            },
        )
        if start is not None:
            if "=" in args[start]:
                raise _refuse(
                    f"`env {args[start]}` sets a variable for the program; Chamberlain does not "
                    "set variables for commands"
                )
            if args[start] == "-":
                raise _refuse("`env -` with a command is not supported")
    elif name == "nice":
        start = _inner_after_options(
            name, args, valued="n", long_valued=("adjustment",), numeric=True
        )
    elif name == "ionice":
        start = _inner_after_options(
            name,
            args,
            flags="t",
            valued="cn",
            long_flags=("ignore",),
            long_valued=("class", "classdata"),
            refused={
                "-p": "changes the priority of other processes",
                "-P": "changes the priority of other processes",
                "-u": "changes the priority of other processes",
                "--pid": "changes the priority of other processes",
                "--pgid": "changes the priority of other processes",
                "--uid": "changes the priority of other processes",
            },
        )
    elif name == "timeout":
        start = _inner_after_options(
            name,
            args,
            flags="v",
            valued="sk",
            long_flags=("preserve-status", "foreground", "verbose"),
            long_valued=("signal", "kill-after"),
        )
        if start is not None:
            if not re.fullmatch(r"\d+(\.\d+)?[smhd]?", args[start]):
                raise _refuse(f"`timeout` needs a duration before the command, not {args[start]!r}")
            start = start + 1 if start + 1 < len(args) else None
    elif name == "nohup":
        start = _inner_after_options(name, args, long_flags=("help", "version"))
    elif name == "stdbuf":
        start = _inner_after_options(
            name, args, valued="ioe", long_valued=("input", "output", "error")
        )
    elif name == "time":
        start = _inner_after_options(
            name,
            args,
            flags="pvq",
            valued="f",
            long_flags=("portability", "verbose", "quiet"),
            long_valued=("format",),
            refused={
                "-o": "writes its report to a file",
                "-a": "writes its report to a file",
                "--output": "writes its report to a file",
                "--append": "writes its report to a file",
            },
        )
    elif name in ("command", "exec"):
        stripped = _strip_stage_prefix([name, *args])
        return Invocation(name, tuple(inv_argv), wrapper=True), stripped
    elif name.startswith(_MULTI_CALL):
        if args and args[0] in ("--install", "--install-s"):
            raise _refuse(f"`{name} --install` creates links all over a folder")
        start = 0 if args and not args[0].startswith("-") else None
    else:
        return inv, None
    if start is None:
        return inv, None
    return Invocation(name, tuple(inv_argv), wrapper=True), args[start:]


def unwrap(argv: Sequence[str]) -> list[Invocation]:
    """Every program a stage runs, outermost first; refuses wrappers that hide what they run."""
    chain: list[Invocation] = []
    current: list[str] | None = list(argv)
    while current is not None:
        if len(chain) >= MAX_WRAPPER_DEPTH:
            raise _refuse(f"more than {MAX_WRAPPER_DEPTH} wrapper programs in one command")
        if not current:
            raise _refuse(f"`{chain[-1].name}` has no program to run")
        _check_program(current[0])
        inv, current = _unwrap_once(current)
        chain.append(inv)
    return chain


# --- programs that run code they are given ------------------------------------------------------


def _script_operand(
    inv: Invocation, ctx: RuleContext, code_letters: str, *, module_flag: bool = False
) -> str | None:
    """Refuse code on the command line; return the script file the program runs, if any.

    The script is the first argument that is an existing regular file: everything before it
    is checked for code options, so `perl -I lib -e CODE` is caught whatever -I takes.
    """
    for arg in inv.args:
        if arg in _STDIN_NAMES:
            raise _refuse(f"`{inv.name} {arg}` reads its program from standard input")
        cluster = _short_cluster(arg)
        lowered = arg.lower()
        if inv.name in ("pwsh", "powershell") and lowered.startswith(("-c", "-e", "/c", "-f")):
            raise _refuse(f"`{inv.name} {arg}` runs code given on the command line")
        if inv.name == "cmd" and lowered in ("/c", "/k", "/r"):
            raise _refuse(f"`cmd {arg}` runs a command line through cmd.exe")
        if cluster and any(letter in cluster for letter in code_letters):
            raise _refuse(
                f"`{inv.name} {arg}` runs code given on the command line, which the rules "
                "cannot check; save it to a file and run that, or run the program directly"
            )
        if _long_matches(arg, _CODE_LONG) or arg in ("--command", "-command", "--init-command"):
            raise _refuse(f"`{inv.name} {arg}` runs code given on the command line")
        if module_flag and arg.startswith("-m"):
            return arg
        if arg.startswith("-") or arg.startswith("+"):
            continue
        path = _resolve(arg, ctx)
        if path is not None and path.is_file():
            return arg
    return None


def _check_code_runner(inv: Invocation, ctx: RuleContext) -> None:
    if inv.name in _SHELLS:
        letters = "c" if inv.name not in ("cmd", "pwsh", "powershell") else ""
        if inv.name == "fish":
            letters = "cC"
        if inv.name in ("bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "rbash"):
            letters = "cs"
        script = _script_operand(inv, ctx, letters)
        if script is None:
            raise _refuse(
                f"`{inv.name}` without an existing script file would read commands from its "
                "input or run a shell; Chamberlain runs programs directly"
            )
        return
    match = _INTERPRETER_RE.fullmatch(inv.name)
    if match is not None:
        family = match.group("family")
        if family == "deno" and inv.args[:1] == ("eval",):
            raise _refuse("`deno eval` runs code given on the command line")
        script = _script_operand(
            inv, ctx, _CODE_LETTERS.get(family, "ce"), module_flag=family in ("python", "pypy")
        )
        if script is None and family not in ("java", "kotlin", "swift", "racket", "sbcl"):
            raise _refuse(
                f"`{inv.name}` without an existing script file would read its program from its "
                "input"
            )
        return
    if inv.name in _AWKS:
        _check_awk(inv)
    if inv.name == "find":
        for arg in inv.args:
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                raise _refuse(
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
            raise _refuse(
                "the awk program runs commands (system(), pipes or getline), which the rules "
                "cannot check"
            )


# --- hard-deny rules ----------------------------------------------------------------------------

_DISK_TOOLS = frozenset(
    {
        "mke2fs", "mkswap", "mkdosfs", "mkntfs", "mkexfatfs", "wipefs", "fdisk", "sfdisk",
        "cfdisk", "gdisk", "sgdisk", "cgdisk", "parted", "gparted", "blkdiscard", "zpool",
        "mdadm", "cryptsetup", "dmsetup", "badblocks", "hdparm", "sg_format", "nvme",
    }
)  # fmt: skip
_POWER = frozenset({"shutdown", "reboot", "poweroff", "halt", "telinit", "init", "killall5"})
_POWER_VERBS = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "soft-reboot", "emergency", "rescue", "isolate",
     "default", "hibernate", "hybrid-sleep", "suspend-then-hibernate"}
)  # fmt: skip
_POWER_TARGETS = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "shutdown", "soft-reboot", "emergency", "rescue",
     "ctrl-alt-del", "exit", "final", "hibernate", "hybrid-sleep", "suspend-then-hibernate"}
)  # fmt: skip
_POWER_METHODS = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybridsleep",
     "suspendthenhibernate", "rebootwithflags", "poweroffwithflags", "haltwithflags",
     "setrebootparameter", "logout", "requestshutdown", "requestreboot", "shutdown"}
)  # fmt: skip
_PERMISSIONS = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl", "chcon"})
_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred", "srm", "wipe", "trash", "trash-put"})
# Programs that act on whole folder trees: refused on any folder above a protected file.
_WHOLE_TREE = frozenset(
    {"rm", "rmdir", "shred", "srm", "wipe", "trash", "trash-put", "chmod", "chown", "chgrp",
     "chattr", "setfacl", "chcon", "mv", "rsync", "rename", "find", "tar", "cpio", "unzip"}
)  # fmt: skip
_IRREVERSIBLE = frozenset(
    {"rm", "rmdir", "unlink", "shred", "srm", "wipe", "dd", "truncate", "kill", "pkill",
     "killall", "mail", "mailx", "sendmail", "mutt"}
)  # fmt: skip


def _deny_rm(inv: Invocation, args: Sequence[str], ctx: RuleContext) -> None:
    options, operands = _options_and_operands(args)
    recursive = _has_flag(options, "rR", ("recursive",))
    force = _has_flag(options, "f", ("force",))
    if any(_long_matches(o, ("no-preserve-root",)) for o in options):
        raise _refuse(f"`{inv.name} --no-preserve-root` is never run")
    if inv.name == "rm" and not (recursive or force):
        return
    for operand in operands:
        broad = _broad_literal(operand)
        if broad is not None:
            raise _refuse(
                f"`{inv.name}` with recursive or force options aimed at {broad} is never run"
            )
        path = _resolve(operand, ctx)
        danger = _dangerous_path(path, ctx) if path is not None else None
        if danger is not None:
            raise _refuse(
                f"`{inv.name}` with recursive or force options aimed at {danger} is never run"
            )


def _deny_permissions(inv: Invocation, args: Sequence[str], ctx: RuleContext) -> None:
    options, operands = _options_and_operands(args)
    if any(_long_matches(o, ("no-preserve-root",)) for o in options):
        raise _refuse(f"`{inv.name} --no-preserve-root` is never run")
    for operand in operands:
        if operand.startswith(("$HOME", "${HOME}")) or operand in ("*", "~/*", "/*"):
            raise _refuse(f"`{inv.name}` aimed at {operand!r} is never run")
        path = _resolve(operand, ctx)
        danger = _dangerous_path(path, ctx) if path is not None else None
        if danger is not None:
            raise _refuse(f"`{inv.name}` on {danger} would break the system; it is never run")


_KILL_FLAGS = (
    "exact", "ignore-case", "interactive", "regexp", "verbose", "wait", "newest", "oldest",
    "inverse", "full", "list-full", "list-name", "count", "quiet", "process-group", "echo",
    "help", "version",
)  # fmt: skip


def _deny_kill(inv: Invocation, args: Sequence[str], ctx: RuleContext) -> None:
    rest = list(args)
    if inv.name == "kill":
        if rest and rest[0] in ("-s", "-n", "--signal"):
            rest = rest[2:]
        elif rest and rest[0].startswith("-") and rest[0] not in ("--", "-1"):
            rest = rest[1:]
        elif rest and rest[0] == "-1" and len(rest) > 1:
            rest = rest[1:]  # `kill -1 PID` sends SIGHUP to PID; the pids follow
        pids = [a for a in rest if a != "--"]
        for pid in pids:
            if pid in ("-1", "1"):
                raise _refuse("`kill` aimed at every process (-1) or at init (1) is never run")
            if pid.lstrip("-").isdigit() and int(pid.lstrip("-")) in ctx.own_pids:
                raise _refuse("`kill` aimed at Chamberlain itself is never run")
        return
    # pkill, killall: a pattern matching everything, or a whole user's (group's …) processes
    valued = "uUgGsPtFo" if inv.name == "pkill" else "usoyZn"
    options: list[str] = []
    patterns: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            patterns.extend(args[i + 1 :])
            break
        if arg.startswith("-") and arg != "-":
            options.append(arg)
            takes_value = (len(arg) == 2 and arg[1] in valued) or (
                arg.startswith("--") and "=" not in arg and not _long_matches(arg, _KILL_FLAGS)
            )
            if takes_value:
                i += 1
        else:
            patterns.append(arg)
        i += 1
    broad = {"", ".", ".*", ".+", "^", "$", "^.*$", "*", "^.*", "^.+"}
    if any(p in broad for p in patterns):
        raise _refuse(f"`{inv.name}` with a pattern that matches every process is never run")
    if not patterns:
        raise _refuse(
            f"`{inv.name}` without a process name selects every process of a user, group or "
            "session; it is never run"
        )


def _deny_dd(args: Sequence[str], ctx: RuleContext) -> None:
    for arg in args:
        if arg.startswith("of="):
            path = _resolve(arg[3:], ctx)
            if (
                path is not None
                and os.fspath(path).startswith("/dev/")
                and (os.fspath(path) != "/dev/null")
            ):
                raise _refuse("`dd` writing onto a device (of=/dev/…) is never run")


def _deny_power(inv: Invocation, args: Sequence[str]) -> None:
    if inv.name in _POWER:
        raise _refuse(f"`{inv.name}` shuts down or restarts the machine; it is never run")
    if inv.name in ("systemctl", "loginctl"):
        _, operands = _options_and_operands(args)
        for operand in operands:
            if operand in _POWER_VERBS or operand.removesuffix(".target") in _POWER_TARGETS:
                raise _refuse(f"`{inv.name} {operand}` shuts down or restarts; it is never run")
    if inv.name in ("busctl", "dbus-send", "gdbus", "qdbus", "qdbus6", "dbus-call"):
        for arg in args:
            method = arg.rsplit(".", 1)[-1].lower()
            if method in _POWER_METHODS:
                raise _refuse(f"`{inv.name}` calling {arg} shuts down or restarts; never run")


def _deny_invocation(inv: Invocation, args: Sequence[str], ctx: RuleContext) -> None:
    if inv.name.startswith(("mkfs", "mke2fs", "mkfs.")) or inv.name in _DISK_TOOLS:
        raise _refuse(f"`{inv.name}` formats or repartitions disks; it is never run")
    _deny_power(inv, args)
    if inv.name in _DELETERS:
        _deny_rm(inv, args, ctx)
    if inv.name in _PERMISSIONS:
        _deny_permissions(inv, args, ctx)
    if inv.name in ("kill", "pkill", "killall"):
        _deny_kill(inv, args, ctx)
    if inv.name == "dd":
        _deny_dd(args, ctx)
    if inv.name == "find" and "-delete" in args:
        starts: list[str] = []
        rest = list(args)
        while rest and (rest[0] in ("-H", "-L", "-P") or rest[0].startswith(("-D", "-O"))):
            takes_value = rest[0] in ("-D", "-O")
            rest = rest[2:] if takes_value else rest[1:]
        for arg in rest:
            if arg.startswith("-") or arg in ("(", "!", ")"):
                break
            starts.append(arg)
        for operand in starts or ["."]:
            path = _resolve(operand, ctx)
            danger = _dangerous_path(path, ctx) if path is not None else None
            if danger is not None:
                raise _refuse(f"`find -delete` under {danger} is never run")
    if inv.name == "mv":
        options, operands = _options_and_operands(args)
        target_dir = _has_flag(options, "t", ("target-directory",))
        for operand in operands if target_dir else operands[:-1]:
            path = _resolve(operand, ctx)
            danger = _dangerous_path(path, ctx) if path is not None else None
            if danger is not None:
                raise _refuse(f"`mv` of {danger} is never run")
    if inv.name == "rsync" and any(
        _long_matches(o, ("delete", "del", "remove-source-files")) for o in args
    ):
        for operand in _options_and_operands(args)[1]:
            path = _resolve(operand, ctx)
            danger = _dangerous_path(path, ctx) if path is not None else None
            if danger is not None:
                raise _refuse(f"`rsync --delete` into or from {danger} is never run")
    if inv.name == "crontab" and _has_flag(_options_and_operands(args)[0], "r", ("remove",)):
        raise _refuse("`crontab -r` deletes every scheduled job; it is never run")


# --- read-only allowlist ------------------------------------------------------------------------

ReadonlyCheck = Callable[[Sequence[str]], str | None]


def _ro_any(_args: Sequence[str]) -> str | None:
    return None


def _ro_forbid(
    short: str = "", long: Sequence[str] = (), max_operands: int | None = None
) -> ReadonlyCheck:
    def check(args: Sequence[str]) -> str | None:
        options, operands = _options_and_operands(args)
        for option in options:
            if _long_matches(option, long):
                return f"{option} can write or change something"
            cluster = _short_cluster(option)
            if cluster and any(letter in cluster for letter in short):
                return f"{option} can write or change something"
        if max_operands is not None and len(operands) > max_operands:
            return "a further file name is where it writes its output"
        return None

    return check


def _ro_date(args: Sequence[str]) -> str | None:
    base = _ro_forbid("s", ("set",))(args)
    if base is not None:
        return base
    _, operands = _options_and_operands(args)
    if any(not op.startswith("+") for op in operands):
        return "a date given as an operand sets the clock"
    return None


def _ro_hostname(args: Sequence[str]) -> str | None:
    base = _ro_forbid("Fb", ("file", "boot"), max_operands=0)(args)
    return "a name given to hostname sets it" if base is not None else None


def _ro_grep(args: Sequence[str]) -> str | None:
    base = _ro_forbid("rR", ("recursive", "dereference-recursive"))(args)
    if base is not None:
        return "a recursive grep reads whole folders, including private ones"
    if any(a.endswith("recurse") for a in args):
        return "a recursive grep reads whole folders, including private ones"
    return None


def _ro_find(args: Sequence[str]) -> str | None:
    for arg in args:
        if arg in ("-delete", "-fprint", "-fprint0", "-fprintf", "-fls"):
            return f"`find {arg}` deletes or writes files"
    return None


_READONLY: dict[str, ReadonlyCheck] = {
    **dict.fromkeys(
        (
            "ls", "dir", "vdir", "cat", "tac", "head", "tail", "wc", "nl", "df", "du", "ps",
            "uname", "whoami", "id", "groups", "logname", "users", "who", "w", "uptime", "free",
            "pwd", "which", "whereis", "stat", "echo", "printf", "cut", "tr", "lsblk", "lscpu",
            "lsusb", "lspci", "lsmem", "nproc", "printenv", "basename", "dirname", "realpath",
            "readlink", "true", "false", "seq", "sleep", "md5sum", "sha1sum", "sha224sum",
            "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "comm", "diff",
            "cmp", "paste", "join", "fold", "fmt", "expand", "unexpand", "column", "rev", "od",
            "hexdump", "strings", "getconf", "locale", "arch", "tty", "factor", "numfmt", "expr",
            "cal", "ncal", "pgrep", "pidof", "jq", "getent", "env", "look", "zcat",
        ),
        _ro_any,
    ),
    "grep": _ro_grep,
    "egrep": _ro_grep,
    "fgrep": _ro_grep,
    "date": _ro_date,
    "hostname": _ro_hostname,
    "sort": _ro_forbid("oT", ("output", "compress-program", "temporary-directory")),
    "uniq": _ro_forbid(max_operands=1),
    "file": _ro_forbid("C", ("compile",)),
    "find": _ro_find,
    "tree": _ro_forbid("oR", ("output",)),
    "xxd": _ro_forbid("r", ("revert",), max_operands=1),
    "ss": _ro_forbid("K", ("kill",)),
    "dmesg": _ro_forbid("cCnDE", ("clear", "read-clear", "console-level", "console-off")),
}  # fmt: skip
# Wrappers that change nothing a read-only command does (env without assignments, nice, …).
_READONLY_WRAPPERS = frozenset(
    {"env", "nice", "ionice", "timeout", "nohup", "stdbuf", "time", "command", "exec"}
)

READONLY_PROGRAMS: frozenset[str] = frozenset(_READONLY)


def _readonly_problem(
    chain: Sequence[Invocation], locate: Callable[[str], Path | None]
) -> str | None:
    """Why this stage is not read-only, or None when it is."""
    for inv in chain:
        listed = _READONLY_WRAPPERS if inv.wrapper else _READONLY
        if inv.name not in listed:
            return f"`{inv.name}` is not on the read-only list"
        if "/" in inv.written or inv.written != inv.name:
            return f"{inv.written!r} is run by path or under another spelling, not by name"
        real = locate(inv.written)
        if real is None:
            return f"`{inv.written}` was not found on this machine"
        if not os.fspath(real).startswith(SYSTEM_PROGRAM_DIRS):
            return f"`{inv.written}` runs {real}, which is not in a system folder"
        if inv.wrapper:
            continue
        check = _READONLY[inv.name]
        problem = check(inv.args)
        if problem is None:
            problem = check([_folded(a) for a in inv.args])
        if problem is not None:
            return f"`{inv.name}`: {problem}"
    return None


# --- where a program really is -----------------------------------------------------------------

# Folders whose programs belong to the system (not writable by the user, normally). A read-only
# command must resolve into one: an `ls` of the user's own in ~/bin is not the `ls` on the list.
SYSTEM_PROGRAM_DIRS = (
    "/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/opt/homebrew/", "/nix/store/",
    "/run/current-system/", "/System/", "/snap/",
)  # fmt: skip


def default_search_path() -> str:
    """PATH as commands get it: absolute entries only (an empty or relative one means cwd)."""
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(p for p in entries if p and os.path.isabs(p))


def locate_program(word: str, search_path: str, cwd: Path) -> Path | None:
    """The real file (symlinks resolved) `word` runs, or None when there is none."""
    if "/" in word:
        candidate = Path(word) if os.path.isabs(word) else cwd / word
        found: str | None = os.fspath(candidate) if candidate.is_file() else None
    else:
        found = shutil.which(word, path=search_path)
    if found is None:
        return None
    try:
        return Path(os.path.realpath(found))
    except (OSError, ValueError):
        return None


# --- assess -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandCheck:
    """What the rules say about one command line that they did not refuse."""

    stages: tuple[tuple[str, ...], ...]
    target: str
    readonly: bool
    reversibility: Reversibility
    reason: str
    programs: tuple[str, ...] = field(default=())
    # Why the command runs code the line does not show (None: it does not).
    code: str | None = None
    # Whether it needs the network (the sandbox has none otherwise), and which stages do: only
    # those get a network (of their own, tools.netns); `curl … | tar x` gives tar none.
    network: bool = False
    network_stages: tuple[int, ...] = ()
    # (stage, TCP port) of this computer's own services a networked stage names: it reaches
    # exactly those ports of the loopback (tools.netns), and the prompt says so.
    local_ports: tuple[tuple[int, int], ...] = ()
    # Where it runs, and the resolved paths its arguments name (what the sandbox mounts).
    cwd: Path | None = None
    paths: tuple[Path, ...] = field(default=())

    @property
    def argv(self) -> list[list[str]]:
        return [list(stage) for stage in self.stages]

    @property
    def kind(self) -> str:
        """ "code", "readonly" or "command": the class a grant is asked for."""
        if self.code is not None:
            return "code"
        return "readonly" if self.readonly else "command"


def _code_consumer(inv: Invocation) -> bool:
    return inv.name in _SHELLS or bool(_INTERPRETER_RE.fullmatch(inv.name))


def _check_paths(
    chain: Sequence[Invocation], stage: Sequence[str], readonly: bool, ctx: RuleContext
) -> str | None:
    """Refuse writes to protected files and disks; return why a read-only stage must ask.

    Any program that is not read-only and is given a protected file (or the folder holding
    one) is refused, whatever it would do with it: the rules cannot know which arguments a
    program writes to. Programs that act on whole trees (deleters, movers, permission changers)
    are refused on any folder above a protected file as well.
    """
    inner = chain[-1]
    mv_destination = _options_and_operands(inner.args)[1][-1:] if inner.name == "mv" else []
    ask: str | None = None
    for arg, path in _resolved_args(stage[1:], ctx):
        hit = _protected_hit(path, ctx)
        if hit is not None:
            protected, how = hit
            if readonly:
                if how == "is":
                    ask = ask or f"it reads Chamberlain's own file {protected}"
            elif how != "contains" or (inner.name in _WHOLE_TREE and arg not in mv_destination):
                raise _refuse(
                    f"{arg!r} leads to Chamberlain's own {protected.name} ({protected}), which "
                    "commands may not change"
                )
        if _is_disk_device(path):
            if not readonly:
                raise _refuse(f"{arg!r} is a disk device, which commands may not write to")
            ask = ask or f"it reads the device {path}"
        if path == Path("/proc/sysrq-trigger") and not readonly:
            raise _refuse("/proc/sysrq-trigger can crash or restart the machine")
        if readonly:
            sensitive = _sensitive_hit(path)
            if sensitive is not None:
                ask = ask or f"it reads {sensitive}"
    return ask


def assess_command(
    command_line: str,
    *,
    cwd: Path | None = None,
    home: Path | None = None,
    protected: Sequence[Path] = (),
    private: PrivatePlaces | None = None,
    own_pids: Iterable[int] | None = None,
    search_path: str | None = None,
) -> CommandCheck:
    """Parse `command_line` and apply every rule; raises ToolRefused with the reason.

    `cwd` is where relative paths lead (default: `home`); `home` is `~` (default: the real
    one). `protected` are files no command may write (the app's own grants, settings, audit and
    memory), resolved here. `private` (default: the credential stores of `home`) are places no
    command may name at all: the sandbox never mounts them. `search_path` is the PATH the
    command will run with (default: this process's, absolute entries only): it decides which
    file a name runs.
    """
    path = search_path if search_path is not None else default_search_path()
    home_path = resolve_path(os.fspath(home)) if home is not None else Path.home()
    cwd_path = resolve_path(os.fspath(cwd)) if cwd is not None else home_path
    protected_paths: list[Path] = []
    for p in protected:
        try:
            protected_paths.append(resolve_path(os.fspath(p)))
        except ValueError:
            log.warning("a protected path could not be resolved; it is skipped")
    pids = set(own_pids) if own_pids is not None else {os.getpid(), 1}
    ctx = RuleContext(
        cwd=cwd_path,
        home=home_path,
        protected=tuple(protected_paths),
        private=private if private is not None else private_places(home_path),
        own_pids=frozenset(pids),
    )
    if ctx.private is not None and (hit := ctx.private.hit(cwd_path)) is not None:
        raise _refuse(f"commands may not run in {cwd_path}: {hit.describe()}")
    words = parse_command_words(command_line, home=home_path)
    stages = [[decoded for _, decoded in stage] for stage in words]

    chains = [unwrap(stage) for stage in stages]
    for stage_words, chain in zip(words, chains, strict=True):
        for inv in chain[1:]:
            index = len(stage_words) - len(inv.argv)
            _check_spelling(stage_words[index][0], inv.written)
    for i, chain in enumerate(chains):
        for later in chains[i + 1 :]:
            fetcher = next((inv for inv in chain if inv.name in _FETCHERS), None)
            runner = next((inv for inv in later if _code_consumer(inv)), None)
            if fetcher is not None and runner is not None:
                raise _refuse(
                    f"fetch-and-run: `{fetcher.name}` output piped into `{runner.name}` runs "
                    "downloaded code unseen; download it, read it, then run the file"
                )
    for i, chain in enumerate(chains):
        fed = next((inv for inv in chain if runs_piped_commands(inv.name, inv.args)), None)
        if i > 0 and fed is not None:
            raise _refuse(
                f"`{fed.name}` would run commands that arrive through the pipe, made only when "
                "the command runs, so nobody can read them first; put them in a file you can read"
            )
    code: str | None = None
    for chain in chains:
        for inv in chain:
            checked = [inv]
            real = locate_program(inv.written, path, cwd_path)
            real_name = _program_name(real.name) if real is not None else inv.name
            if real_name != inv.name and not real_name.startswith(("coreutils", *_MULTI_CALL)):
                # `del -rf ~` where del is a link to rm: the rules see rm as well.
                alias = Invocation(real_name, (real_name, *inv.args), wrapper=inv.wrapper)
                _unwrap_once(alias.argv)
                checked.append(alias)
            for each in checked:
                _check_code_runner(each, ctx)
                folded = [_folded(a) for a in each.args]
                _deny_invocation(each, each.args, ctx)
                if folded != list(each.args):
                    _deny_invocation(each, folded, ctx)
                why = runs_code(each.name, each.args)
                if why is None and _code_consumer(each):
                    why = "runs a program file written in a programming language"
                if why is not None and code is None:
                    code = f"`{each.name}` {why}"
    network_stages = tuple(
        index
        for index, chain in enumerate(chains)
        if any(uses_network(inv.name, inv.args) for inv in chain)
    )
    network = bool(network_stages)
    local_ports: list[tuple[int, int]] = []
    for index in network_stages:
        for named_local in loopback_ports(stages[index][1:]):
            if named_local.port is None:
                raise _refuse(
                    f"{named_local.arg!r} names this computer itself (loopback) without a port; "
                    "a command reaches only the internet and, when its line names one, a port "
                    "of this computer (as http://127.0.0.1:8080/ or localhost:8080)"
                )
            local_ports.append((index, named_local.port))

    named: list[Path] = []
    for stage in stages:
        for arg, resolved in _resolved_args(stage[1:], ctx):
            _check_private(arg, resolved, ctx)
            named.append(resolved)

    readonly = not network
    reasons: list[str] = []
    if network:
        reasons.append("it uses the network")
    for port in dict.fromkeys(port for _, port in local_ports):
        reasons.append(f"it reaches port {port} of this computer itself")
    for stage, chain in zip(stages, chains, strict=True):
        problem = _readonly_problem(chain, lambda word: locate_program(word, path, cwd_path))
        stage_ro = problem is None
        ask = _check_paths(chain, stage, stage_ro, ctx)
        if problem is not None:
            reasons.append(problem)
            readonly = False
        elif ask is not None:
            reasons.append(ask)
            readonly = False
    if code is not None:
        readonly = False
        reasons.insert(0, f"it runs code that cannot be shown here: {code}")

    reversibility: Reversibility = "easy"
    if not readonly:
        reversibility = "effort"
        for chain in chains:
            inner = chain[-1]
            if inner.name in _IRREVERSIBLE or (inner.name == "find" and "-delete" in inner.args):
                reversibility = "irreversible"
            if inner.name in ("curl", "wget") and _has_flag(
                inner.args, "dFTX", ("data", "form", "upload-file", "request", "post-data")
            ):
                reversibility = "irreversible"
        if code is not None:
            reversibility = "irreversible"
    text = argv_text(stages)
    kind = "code" if code is not None else ("readonly" if readonly else "command")
    reason = (
        "read-only: a session grant for read-only commands in its folder covers it"
        if readonly
        else "; ".join(dict.fromkeys(reasons)) + f" (reversibility: {reversibility})"
    )
    log.debug("command classified %s (%d stage(s))", kind, len(stages))
    return CommandCheck(
        stages=tuple(tuple(s) for s in stages),
        target=f"{kind}:{text}",
        readonly=readonly,
        reversibility=reversibility,
        reason=reason,
        programs=tuple(chain[-1].name for chain in chains),
        code=code,
        network=network,
        network_stages=network_stages,
        local_ports=tuple(dict.fromkeys(local_ports)),
        cwd=cwd_path,
        paths=tuple(dict.fromkeys(named)),
    )


def command_target(
    command_line: str,
    *,
    cwd: Path | None = None,
    home: Path | None = None,
    protected: Sequence[Path] = (),
    search_path: str | None = None,
) -> str:
    """The scope of exactly this command line in exactly this folder (default: the home).

    Raises ToolRefused with the reason when the rules never allow it. The broker uses this as
    the scope the user's own message names: a call of that line in that folder is the user's.
    """
    check = assess_command(
        command_line, cwd=cwd, home=home, protected=protected, search_path=search_path
    )
    where = check.cwd if check.cwd is not None else Path.home()
    return exact_command_scope(argv_text(check.stages), os.fspath(where))
