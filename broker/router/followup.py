"""What the router may know of the conversation a message follows: the person's own earlier
words and what the earlier turns named and listed, never the model's or a tool's instructions.

A follow-up ("the second one", "do the same for Downloads", "and tomorrow?") routes like the
turn it follows unless its own words say otherwise, and its referring words resolve to what that
turn named (the folder used) or listed (the files, in the order the person saw them).

Trust: `Earlier.text` and `Earlier.named` come from the person's messages only. `Earlier.listed`
holds the names a tool returned (a listing, search results), kept only so that "the second one"
can pick one of them; a listed name is data: it never widens which tools are shown and it is
never taken as the person's request unless the follow-up's own words point at it by position or
by name. This module must never read files, run anything, or look inside a reply's text.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.types import Intent


@dataclass(frozen=True)
class Earlier:
    """One earlier turn of the conversation, as the router may read it."""

    # The person's message, as they typed it.
    text: str
    # How it was routed.
    intent: Intent
    # Paths, folders and URLs the person's own words named (the router's arguments).
    named: tuple[str, ...] = ()
    # What the turn listed, in the order shown (file names of a listing, result URLs): data.
    listed: tuple[str, ...] = ()
