"""A conversation: the earlier turns a new turn is asked within, as typed data.

`Session.ask(text, conversation=…)` is given a `Conversation`; the executor sends its turns to
the model before the new message, in order (the person's message, the model's tool calls with
their results, the reply), and after the turn the session appends the new `Turn` to it. A front
end that keeps conversations saves each turn with `save_turn` and rebuilds one after a restart
with `Conversation.load` (from ``memory.conversations.ConversationStore``); a temporary
conversation is never saved.

Trust: a turn's `text` is the person's own message, its `intent` and `named` what the router read
from the person's words. Everything else — the replies, the tool calls the model made, their
results, what a listing `listed` — is the model's or a tool's, and stays data: it is sent back to
the model only in the places this turn's own results go (assistant and tool messages, wrapped the
same way by each backend), never into the system prompt, and never widens which tools a later
turn is shown or which paths count as the person's request (`Turn.earlier` gives the router the
person's words and the listings as data, see broker/router/followup.py).

This module must never run a tool, call a model, decide what a turn may do, or save a temporary
conversation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from broker.router.followup import Earlier
from broker.types import Intent

if TYPE_CHECKING:
    from memory.conversations import ChatMessage, ConversationStore

__all__ = [
    "KEPT_RESULT_CHARS",
    "NO_REPLY",
    "Conversation",
    "Step",
    "ToolExchange",
    "Turn",
    "arguments_text",
    "save_turn",
    "turn_rows",
]

TurnStatus = Literal["done", "failed", "cancelled"]

# What a conversation keeps of one tool result (the model saw it whole in its own turn): enough
# for a follow-up about it, well under what one stored message may hold (200 000 characters).
KEPT_RESULT_CHARS = 60_000
KEPT_RESULT_NOTE = "\n[… {n} more characters of this result were not kept in the conversation]"
# What a conversation keeps of a call's arguments and of what the model wrote beside its calls,
# and of what a result listed (for "the second one": the first ones shown). With the front end's
# display copy they stay within what a stored message's metadata may hold (64 KiB).
KEPT_ARGUMENT_CHARS = 8_000
KEPT_STEP_CHARS = 4_000
KEPT_LISTED = 200
KEPT_LISTED_CHARS = 8_000
# The reply of an earlier turn that ended without one (stopped before the model answered).
NO_REPLY = "(No reply: this request was stopped before it was answered.)"

# Where a turn's conversation data sits in its stored rows' metadata.
TURN_KEY = "conversation"


@dataclass(frozen=True)
class ToolExchange:
    """One tool call of an earlier turn and what came back, as the model was given it."""

    call_id: str
    tool: str
    # The arguments as the model sent them (JSON text; a direct action's, made JSON).
    arguments: str
    # What the model was given back: the result (as JSON text), or why the call did not run.
    result: str
    ok: bool
    # What the result listed, in the order shown (a folder's files with their paths): data.
    listed: tuple[str, ...] = ()

    @classmethod
    def kept(
        cls,
        call_id: str,
        tool: str,
        arguments: str,
        result: str,
        ok: bool,
        listed: Sequence[str] = (),
    ) -> ToolExchange:
        """The exchange as a conversation keeps it: a long result and arguments cut."""
        if len(result) > KEPT_RESULT_CHARS:
            extra = len(result) - KEPT_RESULT_CHARS
            result = result[:KEPT_RESULT_CHARS] + KEPT_RESULT_NOTE.format(n=extra)
        return cls(
            call_id=call_id,
            tool=tool,
            arguments=arguments[:KEPT_ARGUMENT_CHARS],
            result=result,
            ok=ok,
            listed=_first_listed(listed),
        )


def _first_listed(listed: Sequence[str]) -> tuple[str, ...]:
    """The first names a result listed, as many as KEPT_LISTED and KEPT_LISTED_CHARS allow."""
    kept: list[str] = []
    room = KEPT_LISTED_CHARS
    for name in listed[:KEPT_LISTED]:
        room -= len(str(name))
        if room < 0:
            break
        kept.append(str(name))
    return tuple(kept)


@dataclass(frozen=True)
class Step:
    """One round of the model's tool loop (or a direct action): its calls and their results."""

    calls: tuple[ToolExchange, ...]
    # What the model wrote beside its calls (usually nothing).
    content: str = ""


@dataclass(frozen=True)
class Turn:
    """One finished turn: the person's message, the tool calls with their results, the reply."""

    # The person's message, as typed.
    text: str
    # The reply the model (or a direct action) gave; NO_REPLY's words are sent when empty.
    reply: str
    # How the router read the person's message, and what their words named.
    intent: Intent = Intent.CHAT_ONLY
    named: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    status: TurnStatus = "done"
    # The ids of the facts this turn kept (added, replacing an older one, or waiting for
    # consent): what "forget that" in the next turn of this conversation points at.
    kept: tuple[str, ...] = ()

    @property
    def calls(self) -> tuple[ToolExchange, ...]:
        return tuple(call for step in self.steps for call in step.calls)

    @property
    def listed(self) -> tuple[str, ...]:
        """What the turn's successful calls listed, in order (data, never the person's words)."""
        return tuple(name for call in self.calls if call.ok for name in call.listed)

    def earlier(self) -> Earlier:
        """This turn as the router may read it for a follow-up."""
        return Earlier(text=self.text, intent=self.intent, named=self.named, listed=self.listed)

    def messages(self) -> list[dict[str, Any]]:
        """The turn as OpenAI-style messages, as its own tool loop sent them: the person's
        message; each step's assistant message with its calls, then each call's result as a
        tool message; the reply last (every turn ends with an assistant message without calls,
        which is where broker.llm.budget tells earlier turns from the current one)."""
        out: list[dict[str, Any]] = [{"role": "user", "content": self.text}]
        for step in self.steps:
            if not step.calls:
                continue
            out.append(
                {
                    "role": "assistant",
                    "content": step.content or None,
                    "tool_calls": [
                        {
                            "id": call.call_id,
                            "type": "function",
                            "function": {"name": call.tool, "arguments": call.arguments},
                        }
                        for call in step.calls
                    ],
                }
            )
            out.extend(
                {"role": "tool", "tool_call_id": call.call_id, "content": call.result}
                for call in step.calls
            )
        out.append({"role": "assistant", "content": self.reply.strip() or NO_REPLY})
        return out


@dataclass
class Conversation:
    """The earlier turns of one conversation, oldest first; `id` once it is saved.

    A temporary conversation holds its turns for follow-ups while it is open and is never
    saved (`save_turn` writes nothing for it)."""

    turns: list[Turn] = field(default_factory=list)
    id: str | None = None
    temporary: bool = False

    def append(self, turn: Turn) -> None:
        self.turns.append(turn)

    def earlier(self) -> tuple[Earlier, ...]:
        """Every turn as the router may read it, oldest first (broker.router.followup)."""
        return tuple(turn.earlier() for turn in self.turns)

    def messages(self) -> list[dict[str, Any]]:
        """The earlier turns as OpenAI-style messages, oldest first (no system message)."""
        return [message for turn in self.turns for message in turn.messages()]

    @classmethod
    def load(cls, store: ConversationStore, conversation_id: str) -> Conversation:
        """A saved conversation rebuilt from the store (ConversationNotFoundError when there is
        none with that id)."""
        return cls.from_messages(conversation_id, store.messages(conversation_id))

    @classmethod
    def from_messages(cls, conversation_id: str, rows: Sequence[ChatMessage]) -> Conversation:
        """A conversation rebuilt from its stored messages, oldest first.

        A turn is a "user" row, the "tool" rows of its calls and its "assistant" row; notices
        are the front end's and are skipped. Rows kept before conversations held their tool
        calls (no conversation data in their metadata) give turns of text alone; a user row
        with no reply after it (the app ended mid-turn) gives a turn without one."""
        turns: list[Turn] = []
        text: str | None = None
        exchanges: list[tuple[int, ToolExchange]] = []
        for row in rows:
            if row.role == "user":
                if text is not None:
                    turns.append(Turn(text=text, reply="", status="cancelled"))
                text, exchanges = row.text, []
            elif row.role == "tool" and text is not None:
                found = _exchange_of(row.meta.get(TURN_KEY), row.text)
                if found is not None:
                    exchanges.append(found)
            elif row.role == "assistant" and text is not None:
                turns.append(_turn_of(text, row, exchanges))
                text, exchanges = None, []
        if text is not None:
            turns.append(Turn(text=text, reply="", status="cancelled"))
        return cls(turns=turns, id=conversation_id)


def _exchange_of(data: object, result: str) -> tuple[int, ToolExchange] | None:
    """(step number, exchange) from a tool row's conversation data and its text (the result),
    or None if it has none."""
    if not isinstance(data, dict):
        return None
    try:
        listed = data.get("listed") or []
        return int(data.get("step", 0)), ToolExchange(
            call_id=str(data["call_id"]),
            tool=str(data["tool"]),
            arguments=str(data.get("arguments", "{}")),
            result=result,
            ok=bool(data.get("ok", False)),
            listed=tuple(str(name) for name in listed) if isinstance(listed, list) else (),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _intent_of(value: object) -> Intent:
    try:
        return Intent(str(value))
    except ValueError:
        return Intent.CHAT_ONLY


def _turn_of(text: str, row: ChatMessage, exchanges: list[tuple[int, ToolExchange]]) -> Turn:
    data = row.meta.get(TURN_KEY)
    if not isinstance(data, dict):
        # Kept before conversations held their tool calls: the words alone. The app's details
        # said how the message was routed.
        details = row.meta.get("details")
        intent = details.get("intent") if isinstance(details, dict) else None
        return Turn(text=text, reply=row.text, intent=_intent_of(intent))
    contents = data.get("steps")
    contents = [str(c) for c in contents] if isinstance(contents, list) else []
    by_step: dict[int, list[ToolExchange]] = {}
    for number, exchange in exchanges:
        by_step.setdefault(number, []).append(exchange)
    steps = tuple(
        Step(
            calls=tuple(by_step[n]),
            content=contents[n] if 0 <= n < len(contents) else "",
        )
        for n in sorted(by_step)
    )
    named = data.get("named")
    status = data.get("status")
    reply = data.get("reply")
    kept = data.get("kept")
    return Turn(
        text=text,
        reply=str(reply) if isinstance(reply, str) else row.text,
        intent=_intent_of(data.get("intent")),
        named=tuple(str(n) for n in named) if isinstance(named, list) else (),
        steps=steps,
        status=status if status in ("done", "failed", "cancelled") else "done",
        kept=tuple(str(k) for k in kept) if isinstance(kept, list) else (),
    )


def turn_rows(
    turn: Turn,
    *,
    shown_reply: str | None = None,
    tool_meta: Mapping[str, Mapping[str, Any]] | None = None,
    reply_meta: Mapping[str, Any] | None = None,
) -> list[tuple[str, str, dict[str, Any]]]:
    """The stored rows of `turn` after its user row, as (role, text, metadata): one "tool" row
    per call (its text the result the model was given), then the "assistant" row (its text
    `shown_reply`, what the front end showed, else the reply). `tool_meta` (by call id) and
    `reply_meta` are the front end's own display data, kept beside the conversation's."""
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for number, step in enumerate(turn.steps):
        for call in step.calls:
            data = {
                "call_id": call.call_id,
                "tool": call.tool,
                "arguments": call.arguments,
                "ok": call.ok,
                "listed": list(call.listed),
                "step": number,
            }
            meta = dict((tool_meta or {}).get(call.call_id, {}))
            meta[TURN_KEY] = data
            # The row's text is the result the model was given (up to KEPT_RESULT_CHARS, well
            # within a message); the metadata (at most 64 KiB) holds the rest of the call and
            # the front end's display copy.
            rows.append(("tool", call.result, meta))
    shown = turn.reply if shown_reply is None else shown_reply
    data_reply: dict[str, Any] = {
        "intent": turn.intent.value,
        "named": list(turn.named),
        "status": turn.status,
        "steps": [step.content[:KEPT_STEP_CHARS] for step in turn.steps],
    }
    if turn.kept:
        data_reply["kept"] = list(turn.kept)
    if shown != turn.reply:
        data_reply["reply"] = turn.reply
    meta = dict(reply_meta or {})
    meta[TURN_KEY] = data_reply
    rows.append(("assistant", shown, meta))
    return rows


def save_turn(
    store: ConversationStore,
    conversation: Conversation,
    turn: Turn,
    *,
    user_saved: bool = False,
    title: str | None = None,
    shown_reply: str | None = None,
    tool_meta: Mapping[str, Mapping[str, Any]] | None = None,
    reply_meta: Mapping[str, Any] | None = None,
) -> bool:
    """Save `turn` (already appended to `conversation`) to the store, all its rows in one
    transaction; a conversation without an id is started first (titled `title`, else the
    person's first message) and takes the new id. `user_saved`: the person's message was
    saved already (the app keeps it as soon as the turn starts). Returns False, writing
    nothing, for a temporary conversation. Raises the store's errors (nothing half-written)."""
    if conversation.temporary:
        return False
    rows = turn_rows(turn, shown_reply=shown_reply, tool_meta=tool_meta, reply_meta=reply_meta)
    if not user_saved:
        rows.insert(0, ("user", turn.text, {}))
    if conversation.id is None:
        conversation.id = store.start(title if title is not None else turn.text).id
    store.add_many(conversation.id, rows)
    return True


def arguments_text(arguments: str | Mapping[str, Any]) -> str:
    """A call's arguments as the JSON text a conversation keeps (a direct action's dict too)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(dict(arguments), ensure_ascii=False, default=str)
