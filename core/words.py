"""Counts and spans of time in words, as every front end and every sentence below app/ says
them: "1 fact", "2 facts" (never "fact(s)"), "5 minutes".

One definition for the app's windows, the command line and the broker's own sentences (a
refusal, memory's note, the audit check). Plain functions of their arguments: no I/O, and
nothing of ours is imported (core is the floor).
"""

from __future__ import annotations


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """A count with its noun: "1 permission", "3 permissions", "0 facts"."""
    return f"{count} {singular if count == 1 else (plural or singular + 's')}"


def span(seconds: float) -> str:
    """How long something lasts, in whole words: "5 minutes", "1 hour 30 minutes", "45 seconds".
    (app/windows/words.py's ``duration`` is the countdown's short form, to the second.)"""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return counted(hours, "hour") + (f" {counted(minutes, 'minute')}" if minutes else "")
    if minutes:
        return counted(minutes, "minute") + (f" {counted(secs, 'second')}" if secs else "")
    return counted(secs, "second")
