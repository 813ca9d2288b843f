"""AuditWriteError: an event could not be written to the audit log, said in one sentence.

A line that cannot be written raises AuditWriteError, so the turn ends as failed rather than
running unaudited. It is a StorageError under Chamberlain's error root, and still an OSError
(errno, strerror, filename) for the callers that report file errors as such.

It must never name a command-line flag or command: a front end words what to do.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import StorageError
from memory.disk import DiskProblem, diagnose_os_error, shown


class AuditWriteError(StorageError, OSError):
    """An event could not be written to the audit log (a full disk, a read-only home, an I/O
    error).

    Raised by ``AuditLog.append`` so that nothing runs unaudited: the session refuses every
    action of a turn whose audit cannot be written. The log is left as a torn tail at worst,
    which ``verify`` reports as an interrupted append and the next writer records as a fault
    the user can acknowledge. ``str()`` is one sentence for the person: what cannot be written,
    why, and what to do (``problem`` holds the diagnosis).
    """

    problem: DiskProblem | None = None

    def __str__(self) -> str:
        return str(self.strerror or super().__str__())


def cannot_write(path: Path, exc: OSError) -> AuditWriteError:
    """The AuditWriteError for `exc`, met writing the audit files beside `path` (the log)."""
    if isinstance(exc, AuditWriteError):
        return exc
    problem = diagnose_os_error(path, exc)
    error = AuditWriteError(
        exc.errno,
        f"the audit log {shown(path)} cannot be written: {problem.why}; {problem.fix}",
        str(exc.filename or path),
    )
    error.problem = problem
    return error
