"""Fitting a request into a model's context: count tokens, drop what matters least, say so.

What a turn sends grows as its tool loop runs: the system prompt (with anchors and recalled facts
and, for a backend without native tool calls, the tool instructions), the person's message, then
each tool call and its result. When that, plus room for the reply, exceeds the model's context,
tool results are cut oldest first — the newest is the one the model is about to use — then, if
that is still not enough, the newest result and finally the person's message are shortened in
the middle. The system prompt (with the anchors and recalled facts) and the current message are
kept longest. Whatever was cut is replaced in place by a note the model can read, and `fit`
reports it so the reply can tell the person.

Tokens are counted with the backend's own tokenizer where it has one (the embedded model), else
estimated from the text (`estimate_tokens`: over-counts rather than under-counts).

This module must never drop the system message or the current message outright, reorder
messages, or return a request it knows to be over the budget without saying so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Counter = Callable[[str], int]

# Per message: the role and the template's markers around it.
MESSAGE_OVERHEAD_TOKENS = 8
CUT_NOTE = "[… {n} characters cut here to fit the model's context …]"
DROPPED_NOTE = "[this tool result was dropped to fit the model's context]"


def estimate_tokens(text: str) -> int:
    """A cautious estimate without a tokenizer: about 3 bytes a token for English (tokenizers
    average nearer 4), more for other scripts, whose bytes the byte count already reflects."""
    return math.ceil(len(text.encode("utf-8", "replace")) / 3)


@dataclass
class Fitted:
    messages: list[dict[str, Any]]
    # What was cut or dropped, in words for the person; empty when everything fitted.
    cuts: list[str] = field(default_factory=list)
    tokens: int = 0
    # Still over even after every cut allowed (the system prompt alone is too big).
    over: bool = False


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False, default=str)


def message_tokens(message: dict[str, Any], count: Counter) -> int:
    total = MESSAGE_OVERHEAD_TOKENS + count(_text_of(message.get("content")))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {} if isinstance(call, dict) else {}
        total += count(str(function.get("name", ""))) + count(str(function.get("arguments", "")))
    return total


def _cut_middle(text: str, keep_tokens: int, count: Counter) -> str:
    """`text` shortened in the middle to about `keep_tokens`, with a note of how much went."""
    if keep_tokens <= 0:
        return CUT_NOTE.format(n=len(text))
    low, high = 0, len(text)
    # The longest head+tail (half each) that fits, by bisection on characters.
    while low < high:
        mid = (low + high + 1) // 2
        head, tail = text[: mid // 2], text[len(text) - (mid - mid // 2) :]
        candidate = head + CUT_NOTE.format(n=len(text) - mid) + tail
        if count(candidate) <= keep_tokens:
            low = mid
        else:
            high = mid - 1
    head, tail = text[: low // 2], text[len(text) - (low - low // 2) :]
    return head + CUT_NOTE.format(n=len(text) - low) + tail


def fit(
    messages: list[dict[str, Any]],
    context_tokens: int,
    reply_tokens: int,
    count: Counter = estimate_tokens,
) -> Fitted:
    """`messages` cut to fit `context_tokens` with `reply_tokens` left for the reply."""
    budget = context_tokens - reply_tokens
    out = [dict(m) for m in messages]
    sizes = [message_tokens(m, count) for m in out]
    cuts: list[str] = []
    if sum(sizes) <= budget:
        return Fitted(out, cuts, sum(sizes))
    results = [i for i, m in enumerate(out) if m.get("role") == "tool"]
    # 1. Older tool results, oldest first, each replaced by a short note.
    for i in results[:-1]:
        if sum(sizes) <= budget:
            break
        out[i]["content"] = DROPPED_NOTE
        sizes[i] = message_tokens(out[i], count)
        cuts.append("an earlier tool result")
    # 2. The newest tool result, then the person's message (the first user message), shortened
    #    in the middle to what is left.
    person = next((i for i, m in enumerate(out) if m.get("role") == "user"), -1)
    shortenable = [*results[-1:], person]
    for i in shortenable:
        excess = sum(sizes) - budget
        if excess <= 0 or i < 0:
            continue
        text = _text_of(out[i].get("content"))
        keep = count(text) - excess
        out[i]["content"] = _cut_middle(text, keep, count)
        sizes[i] = message_tokens(out[i], count)
        cuts.append("part of the latest tool result" if i in results else "part of your message")
    total = sum(sizes)
    return Fitted(out, cuts, total, over=total > budget)


def describe_cuts(cuts: list[str]) -> str | None:
    """One sentence for the person, or None when nothing was cut."""
    if not cuts:
        return None
    kinds: dict[str, int] = {}
    for cut in cuts:
        kinds[cut] = kinds.get(cut, 0) + 1
    parts = [f"{what} ({n}×)" if n > 1 else what for what, n in kinds.items()]
    return (
        "To fit the model's context, I left out " + ", ".join(parts) + ". A model with a larger "
        "context would have seen all of it."
    )
