"""Permission requests as the broker builds them, for tests of the front ends that render them.

`make_request(...)` fills what every request carries (its deadline on a clock, the timeout that
applied) so a test names only what it is about. Real `PermissionRequest` objects: no fakes.
`HeldQuestions` is a prompter without a UI whose questions the test answers itself.
"""

from __future__ import annotations

import threading
from typing import Any

from broker.permissions import PermissionQuestion, PermissionRequest
from core.clock import Clock, SystemClock
from tools.manual import Capability


def make_request(
    *, clock: Clock | None = None, timeout_s: float = 60.0, **fields: Any
) -> PermissionRequest:
    """A request asked now on `clock` (default: the system's), ending `timeout_s` later."""
    now = (clock or SystemClock()).now()
    base: dict[str, Any] = {
        "capability": Capability.FILE_READ,
        "scope": "/tmp",
        "tool": "file_read",
        "arguments": {},
        "call_id": "call-1",
        "user_scope": True,
        "asked_at": now,
        "deadline": now + timeout_s,
        "timeout_s": timeout_s,
    }
    return PermissionRequest(**{**base, **fields})


class HeldQuestions:
    """A prompter without a UI: it keeps every question it is handed, unanswered, for the test
    to answer (`question.answer(...)`) from whichever thread it likes, as a front end would.

    An edge fake (it stands for a person at a dialog); the questions, their deadline and the
    broker's wait are the real ones. `question(i)` waits until the broker has asked it.
    """

    def __init__(self) -> None:
        self.questions: list[PermissionQuestion] = []
        self._asked = threading.Condition()

    def present(self, question: PermissionQuestion) -> None:
        with self._asked:
            self.questions.append(question)
            self._asked.notify_all()

    def question(self, index: int = 0, timeout_s: float = 10.0) -> PermissionQuestion:
        """The `index`-th question asked (from 0), waiting until the broker has asked it."""
        with self._asked:
            if not self._asked.wait_for(lambda: len(self.questions) > index, timeout_s):
                raise AssertionError(f"no permission question was asked within {timeout_s} s")
            return self.questions[index]
