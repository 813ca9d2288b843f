"""tail: the newest records of the audit log, oldest first, reading only the end of the file.

A line that does not parse comes back as an UNREADABLE_LINE record carrying its digest, so a
damaged log shows as damaged. It must never check the chain (that is ``verify``'s job), never
create a file, and never return a damaged line's bytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from broker.audit.files import lines_backward
from broker.audit.format import parse_record
from broker.audit.redaction import digest_json


def tail(path: Path, n: int) -> list[dict[str, Any]]:
    """The last ``n`` records, oldest first, reading only the end of the file.

    A line that does not parse is returned as an UNREADABLE_LINE record carrying its digest,
    so a damaged log shows as damaged; run ``verify`` to learn more.
    """
    if n <= 0:
        return []
    path = Path(path)
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below; read_at needs the open file
    except FileNotFoundError:
        return []
    with f:
        size = os.fstat(f.fileno()).st_size

        def read_at(offset: int, length: int) -> bytes:
            f.seek(offset)
            return f.read(length)

        out: list[dict[str, Any]] = []
        for raw in lines_backward(read_at, size):
            record = parse_record(raw)
            if record is None:
                record = {
                    "seq": None,
                    "ts": None,
                    "event": "UNREADABLE_LINE",
                    "turn": None,
                    "data": {"line": digest_json(raw)},
                    "prev": None,
                    "hash": None,
                }
            out.append(record)
            if len(out) == n:
                break
    out.reverse()
    return out
