"""Fitting a request into a model's context: count tokens, drop what matters least, say so.

What a turn sends grows as its tool loop runs: the system prompt (with anchors and recalled facts
and, for a backend without native tool calls, the tool instructions), the earlier turns of the
conversation (broker/conversation.py), the person's message, then each tool call and its result.
When that, plus room for the reply, exceeds the model's context, tool results are cut oldest
first (an earlier turn's before this turn's) — the newest of this turn is the one the model is
about to use — then the earliest turns are left out whole, oldest first, and the system prompt
says how many messages went; if that is still not enough, the newest result and finally the
person's message are shortened in the middle. The system prompt (with the anchors and recalled
facts) and the current message are kept longest. Whatever was cut is replaced by a note the model
can read, and `fit` reports it so the reply can tell the person.

Earlier turns are told from the current one by their shape: each earlier turn ends with an
assistant message without tool calls (its reply), and the current turn has none yet (its own
assistant messages all carry tool calls). Everything up to the last such reply is earlier; each
earlier turn starts with a user message.

Tokens are counted with the backend's own tokenizer where it has one (the embedded model), else
estimated from the text (`estimate_tokens`: over-counts rather than under-counts).

This module must never drop the system message or the current message outright, drop part of an
earlier turn while keeping the rest of it, reorder messages, or return a request it knows to be
over the budget without saying so.
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
# The context assumed for a server that does not say its own (many OpenAI-compatible servers
# do not) when llm.context_tokens is not set: small enough for the local models people run
# (Ollama's default window is smaller still, and Ollama says its own), so a long conversation
# is cut here, with a note, rather than refused by the server or cut there without a word.
ASSUMED_CONTEXT_TOKENS = 8192
# When a server refuses a request as longer than its context all the same, the request is fitted
# once more to this share of what was sent (the server's real window is below it).
RETRY_SHARE = 0.5
CUT_NOTE = "[… {n} characters cut here to fit the model's context …]"
DROPPED_NOTE = "[this tool result was dropped to fit the model's context]"
LEFT_OUT_NOTE = (
    "[{n} earlier messages of this conversation were left out to fit the model's context; "
    "the conversation continues from there.]"
)


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


def _current_start(messages: list[dict[str, Any]]) -> int:
    """Where the current turn starts: after the last earlier reply (an assistant message
    without tool calls), or after the leading system messages when there is none."""
    start = 0
    while start < len(messages) and messages[start].get("role") in ("system", "developer"):
        start += 1
    for i in range(len(messages) - 1, start - 1, -1):
        message = messages[i]
        if message.get("role") == "assistant" and not message.get("tool_calls"):
            return i + 1
    return start


def _earliest_turn_end(messages: list[dict[str, Any]], first: int, current: int) -> int:
    """The end (exclusive) of the earlier turn that starts at `first`: the next user message."""
    for i in range(first + 1, current):
        if messages[i].get("role") == "user":
            return i
    return current


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
    current = _current_start(out)
    results = [i for i, m in enumerate(out) if m.get("role") == "tool"]
    # The newest result of this turn is the one the model is about to use: shortened, not
    # dropped. An earlier turn's results are all older than anything of this turn.
    newest = [i for i in results[-1:] if i >= current]
    # 1. Older tool results, oldest first, each replaced by a short note.
    for i in results:
        if sum(sizes) <= budget:
            break
        if i in newest:
            continue
        out[i]["content"] = DROPPED_NOTE
        sizes[i] = message_tokens(out[i], count)
        cuts.append("an earlier tool result")
    # 2. The earliest turns of the conversation, whole, oldest first; the system prompt says
    #    how many messages were left out (a note of ours, never among the untrusted ones).
    first = next((i for i in range(current) if out[i].get("role") == "user"), current)
    left_out = 0
    system = 0 if out and out[0].get("role") == "system" else -1
    base_system = _text_of(out[0].get("content")) if system == 0 else ""
    while sum(sizes) > budget and first < current:
        end = _earliest_turn_end(out, first, current)
        left_out += end - first
        del out[first:end], sizes[first:end]
        current -= end - first
        newest = [i - (end - first) for i in newest]
        note = LEFT_OUT_NOTE.format(n=left_out)
        if system == 0:
            out[0]["content"] = f"{base_system}\n\n{note}" if base_system else note
            sizes[0] = message_tokens(out[0], count)
        elif left_out == end - first:
            out.insert(first, {"role": "user", "content": note})
            sizes.insert(first, message_tokens(out[first], count))
            first, current = first + 1, current + 1
            newest = [i + 1 for i in newest]
        else:
            out[first - 1]["content"] = note
            sizes[first - 1] = message_tokens(out[first - 1], count)
    if left_out:
        cuts.append(f"the {left_out} earliest messages of our conversation")
    # 3. The newest tool result, then the person's message (the current turn's first user
    #    message), shortened in the middle to what is left.
    person = next((i for i in range(current, len(out)) if out[i].get("role") == "user"), -1)
    shortenable = [*newest, person]
    for i in shortenable:
        excess = sum(sizes) - budget
        if excess <= 0 or i < 0:
            continue
        text = _text_of(out[i].get("content"))
        keep = count(text) - excess
        out[i]["content"] = _cut_middle(text, keep, count)
        sizes[i] = message_tokens(out[i], count)
        cuts.append("part of the latest tool result" if i in newest else "part of your message")
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
