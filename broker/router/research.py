"""Whether a web lookup is research: a task of several searches and pages read, weighed into a
recommendation or verdict ("compare the three cheapest SSDs and tell me which to buy", "what do
recent studies say about …, give me a verdict", "plan a weekend in Puebla"), rather than one
search for one fact ("weather in Akron tomorrow", "latest Ubuntu version").

Only the wording decides, and only for a message already routed as a lookup: the executor gives
research a larger budget and a prompt to search, read and cite (broker/executor.py), and says what
it needs where no capable model is connected.
"""

from __future__ import annotations

from broker.router.extraction import SCAN_LIMIT
from broker.router.patterns import _RESEARCH_PICK_RE, RESEARCH_ONE_FACT_RE, RESEARCH_RES
from broker.types import Intent, RouterOutput


def is_research(text: str) -> bool:
    """Whether the words ask to compare, weigh sources, recommend or plan — not for one fact
    dressed in research words, unless they also ask to pick among options."""
    head = text[:SCAN_LIMIT]
    if not any(pattern.search(head) for pattern in RESEARCH_RES):
        return False
    return not RESEARCH_ONE_FACT_RE.search(head) or _RESEARCH_PICK_RE.search(head) is not None


def with_research(out: RouterOutput) -> RouterOutput:
    """`out`, marked as research when it is a lookup whose words ask for research."""
    research = out.intent is Intent.LOOKUP_SEARCH and is_research(out.text)
    return out if research == out.research else out.model_copy(update={"research": research})
