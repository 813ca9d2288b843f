"""Starting a window's async work from a Qt slot, and reloads that never run twice at once.

The work runs on the running qasync loop and its failure is logged there: a slot never blocks the
UI thread and never loses a task to the garbage collector.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger("chamberlain.app.windows")

# Tasks started from Qt slots; kept here so none is garbage-collected while it runs.
_tasks: set[asyncio.Task[Any]] = set()


def spawn(work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None:
    """Run `work` on the running (qasync) loop, from a Qt slot. Its failure is logged (the
    windows catch what they can explain themselves). None when no loop runs: the app always
    has one; only a test that drives a window outside its loop gets here."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        work.close()
        log.warning("no event loop is running; %r was not started", work)
        return None
    task = loop.create_task(_reported(work))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


async def _reported(work: Coroutine[Any, Any, Any]) -> Any:
    """`work`, its failure logged inside the task itself (a done-callback would never run for a
    task whose loop has closed, and its exception would be reported as never retrieved)."""
    try:
        return await work
    except Exception:  # the window's boundary: logged, the app stays up
        log.exception("a window's background work failed")
        return None


class Coalesced:
    """An async reload asked for again while it runs: it then runs once more, after — never
    twice at once (each window's refresh goes through one)."""

    def __init__(self, job: Callable[[], Awaitable[None]]) -> None:
        self._job = job
        self._running = False
        self._again = False

    async def __call__(self) -> None:
        if self._running:
            self._again = True
            return
        self._running = True
        try:
            while True:
                self._again = False
                await self._job()
                if not self._again:
                    return
        finally:
            self._running = False
