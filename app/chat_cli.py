"""`chamberlain chat` and `ask --continue`: a conversation on the command line.

`chat` is a loop at the terminal: each line the person types is a turn asked within one
conversation (the broker's `Conversation`: the model sees the earlier turns), with the same
permission prompts as `ask` (app/cli.py's FlagPrompter). Ctrl-C while a turn runs stops that turn
(it ends as cancelled, audited, its one-shot grants ended) and the loop goes on; Ctrl-C at the
prompt clears the line; Ctrl-D leaves. The conversation is kept in the memory database as the
desktop chat keeps its own (broker.conversation.save_turn: the same key, the same rows and
metadata, so the app lists and opens it, and either can go on with it), unless it is temporary;
its id is printed on leaving, for `ask --continue ID` or `chat --continue ID`.

The turn runs on a thread of its own while the main thread waits (app.turn_thread, which `ask`
uses too). Ctrl-C only marks itself and the main thread, which looks at every wait, fires the
turn's StopSignal (as the app's Stop button does): nothing is raised inside whatever the turn,
or the loop keeping it, was doing.

This module decides nothing about permissions, routing or memory: it asks the Session and keeps
what the turn reported. It must never import Qt (the headless CLI), never keep anything of a
temporary chat, and never print around app.terminal's escaping (it writes to sys.stdout/stderr).
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.chat_entries import STATUS_WORDS
from app.errors import FrontEnd, worded
from app.memory_words import reply_with_notices
from app.turn_record import TurnRecord, conversation_title, memory_entry
from app.turn_thread import WAKE_S, CtrlC, Ran, ctrl_c_marked, run_stoppable
from core.errors import StorageError

if TYPE_CHECKING:
    from broker.conversation import Conversation
    from broker.events import TurnEvent
    from broker.session import Session
    from broker.types import MemoryEvent, TurnResult
    from memory.conversations import ConversationStore
    from memory.store.facts import MemoryStore
    from tools.stop import StopSignal

# A short yes to an offer to remember ("yes", "y", "yes please", "sure", "ok, remember it").
YES = re.compile(
    r"^\s*(?:y|ye[sp]|yeah|yup|sure|ok(?:ay)?|please do|do it|go ahead)"
    r"(?:[\s,]+(?:please|do|remember it|keep it|thanks?))*\s*[.!]*\s*$",
    re.IGNORECASE,
)
# After a reply that itself asked something, a bare "yes" answers that question: then only
# "remember it" (or "yes, remember it") takes up the offer.
REMEMBER_IT = re.compile(
    r"^\s*(?:(?:y|yes|yeah|ok(?:ay)?|sure)[\s,]+)?(?:please\s+)?(?:remember|keep) "
    r"(?:it|that|this)(?:\s+please)?\s*[.!]*\s*$",
    re.IGNORECASE,
)
PROMPT = "> "


class ConversationError(StorageError):
    """The conversation asked for cannot be continued (unknown id, none kept, memory closed)."""


@dataclass
class KeptConversation:
    """One conversation the command line asks turns within (the broker's `Conversation`, which
    holds its earlier turns), and where it is kept.

    `store` is None for a temporary chat (nothing is ever written) and when memory could not be
    opened (`problem` says why: the turns still follow each other, only nothing is kept). The
    conversation's `id` is None until its first turn is kept. `memory` is the store this
    command opened, closed by `close`.
    """

    conversation: Conversation
    store: ConversationStore | None = None
    memory: MemoryStore | None = None
    title: str = ""
    problem: str = ""

    @property
    def conversation_id(self) -> str | None:
        return self.conversation.id

    def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
            self.memory = None


def continued(home: Path, settings: Any, conversation_id: str) -> KeptConversation:
    """The kept conversation `conversation_id` ("" for the most recently updated), its earlier
    turns rebuilt from the store. Raises ConversationError when there is none."""
    from app.memory_cli import MemoryCommandError, open_store
    from broker.conversation import Conversation

    try:
        memory = open_store(home, settings)
    except MemoryCommandError as exc:
        raise ConversationError(
            f"the conversation could not be read, because memory could not be opened: {exc}"
        ) from exc
    try:
        store = kept_store(memory, settings)
        if conversation_id:
            found = store.get(conversation_id)
            if found is None:
                raise ConversationError(
                    f"there is no kept conversation with id {conversation_id!r} (it was "
                    "deleted, removed after its retention, or never kept); --continue without "
                    "an id goes on with the most recent one"
                )
        else:
            recent = store.conversations(limit=1)
            if not recent:
                raise ConversationError(
                    "there is no kept conversation to continue yet; start one with "
                    "`chamberlain chat`"
                )
            found = recent[0]
        conversation = Conversation.load(store, found.id)
    except BaseException:
        memory.close()
        raise
    return KeptConversation(conversation, store, memory, found.title)


def kept_store(memory: MemoryStore, settings: Any) -> ConversationStore:
    """The conversations beside the facts, those past their retention deleted first (as the
    desktop app does when it opens memory)."""
    from memory.conversations import ConversationStore

    store = ConversationStore(memory)
    store.prune(settings.chat.retention_days)
    return store


# --- one turn -----------------------------------------------------------------------------------


class TurnPrinter:
    """Records a turn as it runs (app.turn_record's `TurnRecord`, as the desktop chat records
    its own) and, with `show`, shows it on the terminal: the reply streaming to stdout, a line
    on stderr for each tool call, which model answered. `also`: another observer told of every
    event (the session's own, for `ask`)."""

    def __init__(
        self,
        text: str,
        *,
        show: bool = True,
        debug: bool = False,
        also: Callable[[TurnEvent], None] | None = None,
    ) -> None:
        self.record = TurnRecord(text)
        self.show = show
        self.debug = debug
        self.also = also
        # The reply's text streamed since the last tool call (what the terminal shows of it).
        self.streamed = ""
        # Which model answered, said once, after its first reply.
        self.backend = ""

    def __call__(self, event: TurnEvent) -> None:
        from broker.events import BackendNamed, TextDelta, ToolFinished
        from broker.executor import MAX_REPLY_CHARS

        if self.also is not None:
            self.also(event)
        if self.debug:
            from app.cli import _trace_to_stderr

            _trace_to_stderr(event)
        call = self.record.take(event, new_call=lambda _: self._end_streamed_part())
        if isinstance(event, ToolFinished) and call is not None and self.show:
            what = f"{call.tool} {call.summary}".strip()
            why = f": {event.reason}" if event.reason and event.status != "ok" else ""
            sys.stderr.write(f"  [{what}: {STATUS_WORDS.get(event.status, event.status)}{why}]\n")
            sys.stderr.flush()
        elif isinstance(event, TextDelta):
            # The terminal is shown no more of a part than a reply keeps (the executor's cut):
            # a model streaming megabytes does not flood it, and the reply then printed is what
            # was shown, not shown again.
            piece = event.text[: max(0, MAX_REPLY_CHARS - len(self.streamed))]
            self.streamed += piece
            if self.show and piece:
                sys.stdout.write(piece)
                sys.stdout.flush()
        elif isinstance(event, BackendNamed):
            self.backend = event.text

    def _end_streamed_part(self) -> None:
        """Text after a tool call is a new part: it starts below the call's line."""
        if self.streamed:
            if self.show and not self.streamed.endswith("\n"):
                sys.stdout.write("\n")
                sys.stdout.flush()
            self.streamed = ""

    def finish(self, shown: str) -> None:
        """Print the turn's final words (`shown`): what the stream has not shown of them."""
        streamed = self.streamed.strip()
        if streamed and shown.startswith(streamed):
            rest = shown[len(streamed) :]
        elif streamed:
            rest = "\n" + shown  # the stream was cut (Stop): the turn's last words below it
        else:
            rest = shown
        if rest.strip():
            sys.stdout.write(rest)
        sys.stdout.write("\n")
        sys.stdout.flush()
        if self.backend:
            sys.stderr.write(f"({self.backend})\n")
            sys.stderr.flush()


def ask_within(
    session: Session,
    kept: KeptConversation,
    text: str,
    observer: TurnPrinter,
    stop: StopSignal | None = None,
    *,
    remember: bool = False,
) -> TurnResult:
    """Ask `text` as the next turn of `kept`'s conversation (the session appends it);
    `remember`: the person's yes to remembering `text` (Session.ask)."""
    return session.ask(
        text, events=observer, stop=stop, conversation=kept.conversation, remember=remember
    )


def keep_turn(kept: KeptConversation, printer: TurnPrinter, result: TurnResult) -> str:
    """Keep the turn the session just appended to the conversation, as the desktop chat keeps
    its own (broker.conversation.save_turn, with the cards and details the app shows:
    app.turn_record), then memory's lines and "Stopped.". Returns "" or, when it could not be
    kept, why (the turn itself stands, and the next one still follows it)."""
    from broker.conversation import save_turn
    from memory.db import MemoryStoreError

    conversation = kept.conversation
    if kept.store is None or conversation.temporary or not conversation.turns:
        return ""
    turn = conversation.turns[-1]
    record = printer.record
    cards, reply_meta = record.kept_meta(turn, result)
    cancelled = result.status == "cancelled"
    title = conversation_title(turn.text)
    shown = printer.streamed.strip() if cancelled else None
    try:
        if cancelled and not shown and not cards:
            # Stopped before anything was shown: the person's message alone, as the app keeps
            # it (the conversation reads it back as a turn with no reply).
            if conversation.id is None:
                conversation.id = kept.store.start(title).id
            kept.store.add(conversation.id, "user", turn.text)
        else:
            save_turn(
                kept.store,
                conversation,
                turn,
                title=title,
                # A stopped turn shows what had streamed; its "Stopped." is a notice below it.
                shown_reply=shown,
                tool_meta=cards,
                reply_meta=reply_meta,
            )
        cid = conversation.id
        if cid is None:  # save_turn starts it; a temporary one was left out above
            return ""
        kept.title = kept.title or title
        for event in result.memory:
            line = memory_entry(event)
            kept.store.add(cid, "notice", line.body, line.to_meta())
        if cancelled:
            stopped = result.reply.strip() or "Stopped."
            kept.store.add(cid, "notice", stopped, {"kind": "stopped"})
    except (MemoryStoreError, sqlite3.Error, OSError) as exc:
        return f"this turn was not kept in the conversation: {exc}"
    return ""


def keep_asked_turn(
    session: Session, kept: KeptConversation, text: str, ctrl_c: CtrlC, *, remember: bool = False
) -> Ran[TurnResult]:
    """`ask --continue`: one turn within the kept conversation, on a thread of its own that
    Ctrl-C stops (app.turn_thread), kept in it however it ended, a stopped one as the chat keeps
    it. Shown as `ask` shows a turn (the session's own observer; the caller prints the reply)."""
    printer = TurnPrinter(text, show=False, also=session.events)
    ran = run_stoppable(
        lambda stop: ask_within(session, kept, text, printer, stop, remember=remember), ctrl_c
    )
    problem = keep_turn(kept, printer, ran.value)
    if problem:
        sys.stderr.write(f"chamberlain: {problem}\n")
    return ran


# --- the loop -----------------------------------------------------------------------------------


def cmd_chat(args: argparse.Namespace, home: Path) -> int:
    from app.cli import EXIT_OK, FlagPrompter, UsageError, _started, turn_session
    from app.memory_cli import MemoryCommandError, open_store
    from app.settings_notice import settings_for_reading
    from broker.conversation import Conversation

    if args.json:
        raise UsageError(
            "chat is a conversation at the terminal; for JSON, use `ask --json` (with "
            "--continue to go on with a conversation)"
        )
    if args.continue_id is not None and args.temporary:
        raise UsageError(
            "--continue goes on with a kept conversation and --temporary keeps nothing: "
            "use one of them"
        )
    settings = settings_for_reading(home)
    if args.continue_id is not None:
        kept = continued(home, settings, args.continue_id)
    elif args.temporary:
        kept = KeptConversation(Conversation(temporary=True))
    else:
        try:
            memory = open_store(home, settings)
        except MemoryCommandError as exc:
            kept = KeptConversation(Conversation(), problem=str(exc))
        else:
            try:
                store = kept_store(memory, settings)
            except BaseException:
                memory.close()
                raise
            kept = KeptConversation(Conversation(), store, memory)
    try:
        session = turn_session(args, home, settings, memory=kept.memory)
    except BaseException:
        kept.close()
        raise
    # Which model answered is said by the loop's own printer, below the reply.
    session.events = None
    if isinstance(session.prompter, FlagPrompter):
        session.prompter.session_lasts = "until you leave this chat"
    _started()
    try:
        _loop(session, kept, debug=args.debug_routing)
    finally:
        session.close()
        kept.close()
    return EXIT_OK


def _greeting(kept: KeptConversation) -> str:
    lines = ["Chamberlain chat: Enter sends; Ctrl-C stops an answer; Ctrl-D leaves."]
    if kept.conversation.temporary:
        lines.append("Temporary chat: nothing is kept, recalled or remembered.")
    elif kept.conversation_id is not None:
        turns = len(kept.conversation.turns)
        plural = "" if turns == 1 else "s"
        lines.append(
            f"Going on with “{kept.title}” ({kept.conversation_id}, {turns} earlier turn{plural})."
        )
        if kept.conversation.turns:
            # Where it left off, so the person knows what "it" and "the second one" mean now.
            last = kept.conversation.turns[-1]
            lines.append(f"  You last asked: {_shortened(last.text)}")
            if last.reply.strip():
                lines.append(f"  The reply began: {_shortened(last.reply)}")
    elif kept.store is None:
        why = kept.problem.rstrip(".") or "memory is not open"
        lines.append(f"This conversation is not kept: {why}.")
    return "\n".join(lines) + "\n"


def _shortened(text: str, chars: int = 100) -> str:
    """`text` on one line, at most `chars` characters."""
    line = " ".join(text.split())
    return line if len(line) <= chars else line[: chars - 1].rstrip() + "…"


def _farewell(kept: KeptConversation) -> str:
    if kept.conversation.temporary:
        return "Temporary chat: nothing was kept.\n"
    cid = kept.conversation_id
    if cid is None:
        return "Nothing was kept.\n" if kept.store is not None else ""
    return (
        f"Conversation {cid} is kept. Go on with `chamberlain chat --continue {cid}` or "
        f"`chamberlain ask --continue {cid} TEXT`.\n"
    )


class _LineDropped(Exception):
    """Ctrl-C at the prompt."""


class LineReader:
    """The person's lines from stdin, read from its descriptor (as the permission prompt reads
    its answers, so neither holds back what the other should see). On a terminal the line is
    edited by the terminal itself (Backspace, Ctrl-U, Ctrl-W)."""

    def __init__(self, stdin: Any, ctrl_c: CtrlC) -> None:
        self.fd = stdin.fileno()
        self.ctrl_c = ctrl_c
        self.pending = b""
        self.ended = False

    def read(self) -> str | None:
        """The next line, without its end; None at end of input (Ctrl-D). Raises _LineDropped
        on Ctrl-C (what was typed is dropped: the terminal drops its own copy)."""
        import os
        import select

        while b"\n" not in self.pending and not self.ended:
            if self.ctrl_c.take():
                self.pending = b""
                raise _LineDropped
            if not select.select([self.fd], [], [], WAKE_S)[0]:
                continue
            chunk = os.read(self.fd, 4096)
            if chunk:
                self.pending += chunk
            else:
                self.ended = True
        if b"\n" in self.pending:
            line, _, self.pending = self.pending.partition(b"\n")
        elif self.pending:  # the last line, with no end
            line, self.pending = self.pending, b""
        else:
            return None
        return line.decode(errors="replace")


def _prompt(interactive: bool) -> None:
    if not interactive:
        return
    # On the terminal whichever way the replies go (`chat | tee log` keeps its prompt).
    out = sys.stdout if sys.stdout.isatty() else sys.stderr
    out.write(PROMPT)
    out.flush()


def _loop(session: Session, kept: KeptConversation, *, debug: bool) -> None:
    interactive = sys.stdin.isatty()
    sys.stderr.write(_greeting(kept))
    sys.stderr.flush()
    # What the last turn offered to remember (a fact it did not keep), until the next message.
    offered: str | None = None
    # The one remembered fact that matched the last turn's "forget …", until the next message.
    forgettable: MemoryEvent | None = None
    asked_back = False
    with ctrl_c_marked() as ctrl_c:
        reader = LineReader(sys.stdin, ctrl_c)
        while True:
            _prompt(interactive)
            try:
                line = reader.read()
            except _LineDropped:
                # At the prompt, Ctrl-C drops what was typed (Ctrl-D is what leaves).
                sys.stderr.write("\n")
                sys.stderr.flush()
                continue
            if line is None:
                if interactive:
                    sys.stderr.write("\n")
                break
            text = line.strip()
            if not text:
                continue
            taken = REMEMBER_IT.match(text) or (not asked_back and YES.match(text))
            if forgettable is not None and YES.match(text):
                # A short yes to the one fact that matched "forget …": it goes, for good.
                _forget(session, forgettable)
                forgettable = offered = None
                continue
            if offered is not None and taken:
                # A short yes to "I did not keep this…": the offered words are remembered.
                result = _turn(session, kept, offered, ctrl_c, debug=debug, remember=True)
            else:
                result = _turn(session, kept, text, ctrl_c, debug=debug)
            offered = next((m.text for m in result.memory if m.action == "offer"), None)
            asked_back = result.reply.rstrip().endswith("?")
            matches = [m for m in result.memory if m.action == "forget_match" and m.fact_id]
            forgettable = matches[0] if len(matches) == 1 else None
            if forgettable is not None:
                sys.stderr.write('Say "yes" to forget it now.\n')
                sys.stderr.flush()
            if offered is not None and asked_back:
                sys.stderr.write(
                    'A "yes" now answers the question above; say "remember it" to keep the fact.\n'
                )
                sys.stderr.flush()
    sys.stderr.write(_farewell(kept))
    sys.stderr.flush()


def _forget(session: Session, event: MemoryEvent) -> None:
    """Forget the fact `event` names, and say what happened."""
    memory = session.memory
    if memory is None or event.fact_id is None:
        why = session.memory_problem or "memory is not available"
        sys.stderr.write(f"chamberlain: not forgotten: {why}\n")
        sys.stderr.flush()
        return
    try:
        memory.forget(event.fact_id)
    except StorageError as exc:
        sys.stderr.write(f"chamberlain: not forgotten: {exc}\n")
    else:
        sys.stdout.write(f'Forgotten: "{event.text}".\n')
        sys.stdout.flush()
    sys.stderr.flush()


def _turn(
    session: Session,
    kept: KeptConversation,
    text: str,
    ctrl_c: CtrlC,
    *,
    debug: bool,
    remember: bool = False,
) -> TurnResult:
    """One turn on the turn thread; Ctrl-C meanwhile stops it, and the loop goes on."""

    def stopping() -> None:
        # The turn ends itself, cancelled and audited; another Ctrl-C only waits for it.
        sys.stderr.write("\nStopping…\n")
        sys.stderr.flush()

    printer = TurnPrinter(text, debug=debug)
    result = run_stoppable(
        lambda stop: ask_within(session, kept, text, printer, stop, remember=remember),
        ctrl_c,
        stopping=stopping,
        name="chamberlain-chat-turn",
    ).value
    shown = reply_with_notices(worded(result.reply, result.remedy, FrontEnd.CLI), result.memory)
    printer.finish(shown)
    problem = keep_turn(kept, printer, result)
    if problem:
        sys.stderr.write(f"chamberlain: {problem}\n")
        sys.stderr.flush()
    return result
