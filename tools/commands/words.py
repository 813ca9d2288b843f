"""One word of a command line with its quotes removed the way bash would, nothing expanded.

Single quotes, double quotes, backslashes and `$'…'` are decoded by this module's own strict
decoder; variables, globs (`*`, `?`, `[`), braces, and `~` anywhere but alone or before `/` are
refused. Globs are refused rather than expanded: expanding them here would show the person one
argv in the prompt and run another if the folder changes in between, and passing them literally
would silently do something other than what a shell user meant. Quoted text is always literal,
so `find . -name '*.txt'` passes the pattern on to find. `check_program` says which words may
name a program at all.

This module must never expand anything a shell would expand, and never decode an escape that
makes raw bytes or control keys.
"""

from __future__ import annotations

import re

from tools.commands.grammar import NODE_REASONS, refuse

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
            raise refuse("expansion ($…) inside double quotes is not done; use single quotes")
        if ch == "`":
            raise refuse("command substitution (backticks) runs a hidden command")
        out.append(ch)
        i += 1
    raise refuse("a double quote is not closed")


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
                    raise refuse(f"the escape \\{esc} in $'…' has no digits")
                value = int(digits, 16)
            if esc in "x01234567" and value > 0x7F:
                raise refuse("byte escapes above \\x7f in $'…' are not supported")
            if value > 0x10FFFF:
                raise refuse("a \\U escape in $'…' is beyond Unicode")
            out.append(chr(value))
            continue
        if esc == "c":
            raise refuse("control-key escapes (\\c) in $'…' are not supported")
        out.append("\\" + esc)
    raise refuse("a $'…' quote is not closed")


def decode_word(text: str, home: str) -> str:
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
                raise refuse("the command ends with a lone backslash")
            out.append(text[i + 1])
            i += 2
        elif ch == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise refuse("a single quote is not closed")
            out.append(text[i + 1 : end])
            i = end + 1
        elif ch == '"':
            i = _decode_double(text, i + 1, out)
        elif ch == "$":
            if text.startswith("$'", i):
                i = _decode_ansi_c(text, i + 2, out)
            elif text.startswith('$"', i):
                raise refuse('a $"…" locale string is shell syntax')
            else:
                raise refuse(
                    "variable expansion ($NAME) is not done: Chamberlain runs no shell; "
                    "write the value itself"
                )
        elif ch == "~":
            raise refuse(
                "`~` is only expanded on its own or before `/` (~/Documents); write the path "
                "in full or quote it"
            )
        elif ch == "#" and i == 0:
            raise refuse(NODE_REASONS["comment"])
        elif ch in _UNQUOTED_REASONS:
            raise refuse(_UNQUOTED_REASONS[ch])
        else:
            out.append(ch)
            i += 1
    return "".join(out)


_PROGRAM_RE = re.compile(r"[A-Za-z0-9_.+@:/-]+")


def check_program(word: str) -> None:
    if not word:
        raise refuse("the program name is empty")
    if not word.isascii():
        raise refuse(
            f"the program name {word!r} has characters outside plain ASCII, which can look like "
            "another program's name"
        )
    if word.startswith("-") or not _PROGRAM_RE.fullmatch(word):
        raise refuse(f"{word!r} is not a program name Chamberlain will run")
