"""What the command line writes to the terminal: everything made safe to show, at one boundary.

A reply, a tool's result, a file name or a server's error message can carry an ESC sequence
(which moves the cursor, rewrites earlier lines, sets the window title), a bidi override or a
zero-width character (which make one name read as another), or a file name's bytes that are not
UTF-8 (which the terminal's encoder refuses). `SafeText` wraps the process's stdout and stderr
so that every write goes through `tools.escapes.visible` — line breaks and tabs kept — whoever
wrote it: the CLI's own messages, a permission prompt, a log line. JSON output is escaped the
JSON way first (`json_text`), so it stays the same JSON value and passes through unchanged.

This module never imports Qt and never drops a character: what it cannot show, it escapes.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any, cast

from tools.escapes import visible, visible_json


class SafeText:
    """A text stream that writes through another with hidden characters escaped."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(visible(text, lines=True))
        # What the caller wrote, as TextIO.write reports it (not what reached the terminal).
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        # flush, isatty, fileno, encoding, …: the wrapped stream's own.
        return getattr(self.stream, name)


@contextlib.contextmanager
def safe_terminal() -> Iterator[None]:
    """Within the block, sys.stdout and sys.stderr escape what they are given."""
    out, err = sys.stdout, sys.stderr
    sys.stdout = cast(IO[str], SafeText(out))
    sys.stderr = cast(IO[str], SafeText(err))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def json_text(data: Any, **options: Any) -> str:
    """`data` as JSON with non-ASCII text kept readable and hidden characters JSON-escaped."""
    return visible_json(json.dumps(data, ensure_ascii=False, **options))
