"""Which characters a command line and each of its arguments may hold, and the look-alike fold.

A line may hold printable characters, plain spaces and tabs. A NUL, control characters, invisible
and formatting characters (which can hide what a line really says), spaces other than a plain
one, private-use, unassigned and lone surrogate characters, line continuations and new lines are
refused, with the character named. `fold` gives an argument's NFKC form, so the rules can also
check `－rf` and `／` as `-rf` and `/`.

This module must never accept a character it cannot show a person plainly, and the fold is for
checking only: it never changes the argv that runs.
"""

from __future__ import annotations

import unicodedata

from tools.manual import ToolRefused

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


def check_line_characters(line: str) -> None:
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


def check_argument_characters(arg: str, index: int) -> None:
    for ch in arg:
        problem = _char_problem(ch)
        if problem is not None:
            where = "the program name" if index == 0 else f"argument {index}"
            raise ToolRefused(f"refused: {where} contains {problem}")


def fold(arg: str) -> str:
    """The compatibility form: fullwidth and other look-alike letters become the plain ones."""
    return unicodedata.normalize("NFKC", arg)
