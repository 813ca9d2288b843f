"""How text that came from outside is shown: the one definition of what gets escaped, and how.

File names, tool results, model replies and server messages are hostile input. Shown raw on a
terminal, an ESC sequence can move the cursor, rewrite earlier lines or set the window title; a
bidi override or a zero-width character can make a name read as another; and a file name that
is not valid UTF-8 reaches Python as lone surrogates (PEP 383), which no JSON request, SQLite row
or UTF-8 terminal can carry. `visible()` escapes all of these; everything else — letters of any
script, emoji, ordinary punctuation — stays as it is.

The escapes are Python's: `\\x1b` for an ASCII control character, `\\u202e` / `\\U000e0001` for
any other code point, and `\\xff` for a byte that is not UTF-8 (only bytes >= 0x80 are ever
undecodable, and code points from U+0080 up are always written `\\u…`, so `\\xHH` never means
two things). `visible_name()` also doubles backslashes when it escapes anything, so a name shown
escaped maps back to exactly one name on disk (`name_from_visible`).

This module never touches the filesystem and never decides policy: it only rewrites strings.
"""

from __future__ import annotations

import re
import unicodedata

# Characters that render as nothing or as a blank though Unicode does not call them formatting
# characters: Hangul fillers and the braille blank (a name can look empty or like another).
_BLANK_LOOKING = frozenset({0x115F, 0x1160, 0x2800, 0x3164, 0xFFA0})
_ZWJ = "\u200d"
_VARIATION_EMOJI = "\ufe0f"
_TEXT_KEPT = "\n\t"
_SURROGATE = re.compile("[\ud800-\udfff]")
# Only these are looked at one by one: printable ASCII is always shown as it is.
_SUSPECT = re.compile(r"[^\x20-\x7e]")


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # a byte that was not UTF-8 (surrogateescape)
    if code < 0x80:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _joins_emoji(text: str, index: int) -> bool:
    """A zero-width joiner inside an emoji sequence (👩‍🚀): part of the picture, not a trick."""
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if not before or not after:
        return False
    before_ok = before == _VARIATION_EMOJI or unicodedata.category(before) in ("So", "Sk")
    return before_ok and unicodedata.category(after) == "So"


def _hidden(text: str, index: int, keep: str) -> bool:
    ch = text[index]
    if ch in keep:
        return False
    if ch.isprintable():
        # False for every Cc, Cf, Cs, Zl, Zp, Co, Cn, and for spaces other than the ASCII one.
        return ord(ch) in _BLANK_LOOKING
    category = unicodedata.category(ch)
    if category in ("Co", "Cn", "Zs"):
        # Private-use (icon fonts) and unassigned code points, and unusual spaces, change
        # nothing on a terminal and show as what they are; escaping them would only garble.
        return False
    return not (ch == _ZWJ and _joins_emoji(text, index))


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with control, bidi, zero-width and other hidden characters, and bytes that were
    not UTF-8, escaped. `lines=True` keeps line breaks and tabs (a reply or a listing);
    otherwise they are escaped too (a name, a path, one line of a message)."""
    keep = _TEXT_KEPT if lines else ""

    def shown(match: re.Match[str]) -> str:
        ch = match.group()
        return _escape(ch) if _hidden(text, match.start(), keep) else ch

    return _SUSPECT.sub(shown, text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible_json(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with the characters `visible()`
    escapes written as JSON escapes instead: the same JSON value, safe on a terminal."""

    def shown(match: re.Match[str]) -> str:
        ch = match.group()
        return _json_escape(ch) if _hidden(text, match.start(), _TEXT_KEPT) else ch

    return _SUSPECT.sub(shown, text)


def encodable(text: str) -> str:
    """`text` with only its lone surrogates escaped (bytes that were not UTF-8 become `\\xff`):
    what UTF-8 — a JSON request, a database row — can carry, and otherwise unchanged."""
    if text.isascii():
        return text
    return _SURROGATE.sub(lambda match: _escape(match.group()), text)


def needs_escaping(text: str) -> bool:
    """Whether `visible(text)` would change it."""
    return visible(text) != text


def visible_name(name: str) -> str:
    """A file name or path as it is shown and handed to the model: like `visible()`, and when
    anything is escaped, backslashes are doubled too, so the shown form names exactly one file
    (`name_from_visible`). A name with nothing to escape is returned as it is."""
    shown = visible(name)
    if shown == name:
        return name
    return visible(name.replace("\\", "\\\\"))


def visible_path(path: str) -> str:
    """A path shown name by name (`visible_name` for each), so that a folder's shown path is
    the start of the shown path of everything in it."""
    return "/".join(visible_name(part) for part in path.split("/"))


def path_from_visible(shown: str) -> str | None:
    """The path `visible_path` showed as `shown`, or None when no part of it holds an escape."""
    parts = shown.split("/")
    names = [name_from_visible(part) for part in parts]
    if all(name is None for name in names):
        return None
    return "/".join(part if name is None else name for part, name in zip(parts, names, strict=True))


_ESCAPE_RE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(\\))")


def name_from_visible(shown: str) -> str | None:
    """The name `visible_name` showed as `shown`, as Python holds file names (undecodable bytes
    as surrogates), or None when `shown` holds no escape (it is then a plain name already)."""
    if "\\" not in shown or _ESCAPE_RE.search(shown) is None:
        return None
    out: list[str] = []
    pending = bytearray()  # undecodable bytes, kept together so that a sequence stays one

    def flush() -> None:
        if pending:
            out.append(pending.decode("utf-8", "surrogateescape"))
            pending.clear()

    position = 0
    for match in _ESCAPE_RE.finditer(shown):
        if match.start() > position:
            flush()
            out.append(shown[position : match.start()])
        byte, short, long, backslash = match.groups()
        if byte is not None:
            pending.append(int(byte, 16))
        else:
            flush()
            if backslash is not None:
                out.append("\\")
            else:
                code = int(short or long, 16)
                if code > 0x10FFFF:
                    return None
                out.append(chr(code))
        position = match.end()
    flush()
    out.append(shown[position:])
    return "".join(out)
