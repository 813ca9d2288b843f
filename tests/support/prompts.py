"""Permission requests as the broker builds them, for tests of the front ends that render them.

`make_request(...)` fills what every request carries (its deadline on a clock, the timeout that
applied) so a test names only what it is about. Real `PermissionRequest` objects: no fakes.
"""

from __future__ import annotations

from typing import Any

from broker.permissions import PermissionRequest
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
