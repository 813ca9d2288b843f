"""The chat window: tool cards, streaming, Stop, keys, temporary chats, kept conversations, Undo.

Real parts: real widgets offscreen driven by real key presses and clicks, a real Session on a
real home and files, real turns through the QtSession on a qasync loop, a real plaintext memory
database (facts and conversations in one SQLite file, reopened from disk for the restart test),
the real OpenAI client against the scripted OpenAI server on 127.0.0.1 where a model is needed,
and the real confirmation box, answered by clicking its button. The prompters stand in for the
person answering permission questions.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QAbstractButton, QMessageBox

from app.chat import ASKED_HINT_MS, ChatWindow
from app.chat_entries import NoticeEntry, UserEntry
from app.chat_view import MAX_LIVE, PAGE, MemoryLine, ReplyBubble, ToolCard
from app.qt_session import QtSession
from broker.events import TextDelta, TurnEvent
from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.types import GrantMode
from memory.conversations import ConversationNotFoundError, ConversationStore
from memory.db import open_database
from memory.store.facts import MemoryStore
from memory.types import FactSource, FactStatus, Sensitivity
from tests.app.gui.conftest import make_session, until
from tests.support.openai_server import Raw, Text, ToolCalls, Trickle


class Allow(RulePrompter):
    """Says yes, once, to every permission question."""

    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


class Deny(RulePrompter):
    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=False)


def open_memory(path: Path) -> MemoryStore:
    return MemoryStore(open_database(path, key=None, encrypted=False))


@pytest.fixture
def docs(app_home: Path) -> Path:
    folder = app_home.parent / "user" / "Documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    (folder / "budget-2026.ods").write_text("1,2\n")
    return folder


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryStore]:
    store = open_memory(tmp_path / "memory.db")
    yield store
    store.close()


class Rig:
    """One assistant and its chat window; `close()` stops both."""

    def __init__(self, qtbot: Any, assistant: QtSession, history: ConversationStore | None):
        self.assistant = assistant
        self.history = history
        self.window = ChatWindow(assistant, lambda: self.history)
        qtbot.addWidget(self.window)
        self.window.resize(900, 650)

    async def shown(self) -> ChatWindow:
        self.window.show()
        await until(self.window.isVisible)
        await self.window.settled()
        return self.window

    def close(self) -> None:
        self.window.hide()
        self.assistant.close()


def rig(qtbot: Any, home: Path, memory: MemoryStore | None = None, **options: Any) -> Rig:
    session = make_session(home, memory=memory, **options)
    return Rig(qtbot, QtSession(session), ConversationStore(memory) if memory else None)


async def type_and_send(qtbot: Any, window: ChatWindow, text: str) -> None:
    window.input.setFocus()
    qtbot.keyClicks(window.input, text)
    qtbot.keyClick(window.input, Qt.Key.Key_Return)


async def turn_done(window: ChatWindow) -> None:
    await until(lambda: window.send_button.isEnabled() and window.transcript.entries)
    await window.settled()


def cards(window: ChatWindow) -> list[ToolCard]:
    return [w for w in window.transcript.widgets() if isinstance(w, ToolCard)]


def replies(window: ChatWindow) -> list[ReplyBubble]:
    return [w for w in window.transcript.widgets() if isinstance(w, ReplyBubble)]


def test_a_file_request_shows_an_ok_tool_card_whose_result_lists_the_files_and_the_reply(
    qtbot, run, app_home, docs
):
    prompter = Allow()
    chat = rig(qtbot, app_home, prompter=prompter)

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, f"list files in {docs}")
        await turn_done(window)

    run(scenario())
    window = chat.window
    assert prompter.asked, "the permission was asked for"
    [card] = cards(window)
    assert card.entry.call.status == "ok"
    assert card.status_text() == "OK"
    assert card.tool.text() == "List a folder"
    assert card.capability.text() == "Read files"
    assert str(docs) in card.summary.text()
    assert card.duration.text().endswith(("ms", "s"))
    # Collapsed until asked for.
    assert card.result.isHidden()
    card.toggle.click()
    assert not card.result.isHidden()
    assert "notes.txt" in card.result.text()
    assert "budget-2026.ods" in card.result.text()
    [reply] = replies(window)
    assert "notes.txt" in reply.view.toPlainText()
    assert window.input.toPlainText() == ""
    chat.close()


def test_a_call_denied_before_it_started_still_gets_a_card(qtbot, run, app_home, docs):
    chat = rig(qtbot, app_home, prompter=Deny())

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, f"read {docs}/notes.txt")
        await turn_done(window)

    run(scenario())
    [card] = cards(chat.window)
    assert card.entry.call.status == "denied"
    assert card.status_text() == "Denied"
    assert not card.spinner.isVisibleTo(card)
    assert "hello" not in chat.window.transcript.text()
    chat.close()


def test_a_question_answered_at_once_leaves_no_waiting_hint_behind(qtbot, run, app_home, docs):
    """The "waiting for your permission" hint comes a moment after the question (after its
    dialog, ASKED_HINT_MS); a question answered before then never shows it afterwards."""
    chat = rig(qtbot, app_home, prompter=Deny())

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, f"list files in {docs}")
        await turn_done(window)
        await asyncio.sleep(2 * ASKED_HINT_MS / 1000)  # past when the hint would have come

    run(scenario())
    [card] = cards(chat.window)
    assert card.entry.call.status == "denied"  # a question was asked, and answered at once
    assert chat.window.hint.isHidden()
    assert "Waiting for your permission" not in chat.window.hint.text()
    chat.close()


def test_enter_hands_the_turn_to_its_thread_before_the_window_draws_anything(
    qtbot, run, app_home, docs, memory
):
    """The turn is on its own thread before Enter's handler returns: not behind the input's
    repaint and the person's message, which are drawn after it (bench/prompt_latency.py). The
    message still shows, above what the turn reported, and is kept before the reply."""
    chat = rig(qtbot, app_home, memory, prompter=Deny())
    started = threading.Event()
    session = chat.assistant.session
    real_ask = session.ask

    def ask(*args: Any, **kwargs: Any) -> Any:
        started.set()
        return real_ask(*args, **kwargs)

    session.ask = ask  # type: ignore[method-assign]
    window = chat.window

    async def scenario() -> None:
        await chat.shown()
        await type_and_send(qtbot, window, f"list files in {docs}")
        # No turn of the event loop since Enter: only its handler can have started the turn.
        assert started.wait(10), "the turn had not started on its thread when Enter returned"
        assert window.transcript.entries == []  # the message is drawn a moment later
        assert window.input.toPlainText() == ""
        await turn_done(window)

    run(scenario())
    text = window.transcript.text()
    assert text.index(f"list files in {docs}") < text.index("Denied")
    [conversation] = ConversationStore(memory).conversations()
    roles = [m.role for m in ConversationStore(memory).messages(conversation.id)]
    assert roles[0] == "user", roles
    assert "assistant" in roles[1:], roles
    chat.close()


def test_the_persons_message_shows_by_itself_while_a_turn_reports_nothing(
    qtbot, run, app_home, scripted_server
):
    """A turn that is slow to report anything (a model thinking) still shows the person's
    message within a moment of Enter, not when the reply starts."""
    gate = threading.Event()

    def slow(_request: dict[str, Any]) -> Text:
        gate.wait(10)
        return Text("Here I am.")

    server = scripted_server([slow])
    chat = rig(qtbot, app_home, model=OpenAIChatModel(server.base_url, model="m"))

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, "tell me a short joke about tea")
        await until(lambda: "tell me a short joke about tea" in window.transcript.text(), 2)
        assert not replies(window)  # the model has not answered yet
        gate.set()
        await turn_done(window)

    try:
        run(scenario())
    finally:
        gate.set()
    assert "Here I am." in chat.window.transcript.text()
    chat.close()


def test_a_streaming_reply_shows_its_text_before_the_turn_ends(
    qtbot, run, app_home, scripted_server
):
    answer = "Paris is the capital of France. It sits on the Seine, in the north of the country."
    server = scripted_server([Trickle(Text(answer), interval=0.001)], fragments=8)
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    chat = rig(qtbot, app_home, model=model)
    window = chat.window
    seen_while_streaming: list[str] = []

    def watch(event: TurnEvent) -> None:
        # Connected after the window: the window has handled this event already.
        if isinstance(event, TextDelta) and not seen_while_streaming:
            seen_while_streaming.append(window.transcript.text())

    chat.assistant.turn_event.connect(watch)

    async def scenario() -> None:
        await chat.shown()
        await type_and_send(qtbot, window, "what is the capital of france")
        await turn_done(window)

    run(scenario())
    [partial] = seen_while_streaming
    assert "what is the capital of france" in partial
    streamed = partial.split("what is the capital of france", 1)[1].strip()
    assert streamed
    assert answer.startswith(streamed)
    assert streamed != answer
    [reply] = replies(window)
    assert reply.view.toPlainText() == answer
    chat.close()
    model.close()


def test_replies_render_markdown_and_a_link_opens_nothing_by_itself(
    qtbot, run, app_home, scripted_server
):
    server = scripted_server([Text("Here is **bold** and a [link](https://example.com/x).")])
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    chat = rig(qtbot, app_home, model=model)

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, "tell me a joke")
        await turn_done(window)

    run(scenario())
    [reply] = replies(chat.window)
    assert reply.view.toPlainText() == "Here is bold and a link."  # rendered, not raw markdown
    assert "font-weight" in reply.view.toHtml()
    reply.view.anchorClicked.emit(QUrl("https://example.com/x"))
    assert reply.view.toPlainText() == "Here is bold and a link."  # nothing navigated
    assert "https://example.com/x" in chat.window.hint.text()
    assert "not opened automatically" in chat.window.hint.text()
    chat.close()
    model.close()


def test_stop_during_a_trickling_reply_ends_with_stopped_and_sending_works_again(
    qtbot, run, app_home, scripted_server
):
    # 400 pieces of ~200 bytes, a byte every 2 ms: minutes in all, unless stopped.
    server = scripted_server(
        [Trickle(Text("word " * 16000), interval=0.002), Text("Second answer.")], fragments=400
    )
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=100)
    chat = rig(qtbot, app_home, model=model)
    window = chat.window

    async def scenario() -> None:
        await chat.shown()
        assert not window.stop_button.isEnabled()
        await type_and_send(qtbot, window, "tell me a long story")
        await until(lambda: replies(window) and "word" in replies(window)[0].view.toPlainText())
        assert window.stop_button.isEnabled()
        assert not window.send_button.isEnabled()
        # Typing goes on during the turn; Enter does not send it, and says why.
        qtbot.keyClicks(window.input, "and then?")
        qtbot.keyClick(window.input, Qt.Key.Key_Return)
        assert window.input.toPlainText() == "and then?"
        assert "Wait for this request to finish" in window.hint.text()
        qtbot.mouseClick(window.stop_button, Qt.MouseButton.LeftButton)
        await turn_done(window)

    run(scenario(), timeout=40)
    assert window.transcript.text().rstrip().endswith("Stopped.")
    assert "word" in replies(window)[0].view.toPlainText()  # what streamed stays
    assert window.send_button.isEnabled()
    assert not window.stop_button.isEnabled()
    assert sum(isinstance(e, UserEntry) for e in window.transcript.entries) == 1

    async def again() -> None:
        qtbot.keyClick(window.input, Qt.Key.Key_Return)  # "and then?" is sent now
        await turn_done(window)

    run(again())
    assert window.input.toPlainText() == ""
    # (Refinement is off in these sessions: an unsure reading also says what it was taken as.)
    assert replies(window)[-1].view.toPlainText().startswith("Second answer.")
    chat.close()
    model.close()


def test_shift_enter_adds_a_line_without_sending(qtbot, run, app_home):
    chat = rig(qtbot, app_home)
    window = chat.window

    async def scenario() -> None:
        await chat.shown()
        window.input.setFocus()
        qtbot.keyClicks(window.input, "first line")
        qtbot.keyClick(window.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        qtbot.keyClicks(window.input, "second line")
        await asyncio.sleep(0.2)

    run(scenario())
    assert window.input.toPlainText() == "first line\nsecond line"
    assert window.transcript.entries == []
    assert window.send_button.isEnabled()
    chat.close()


def test_escape_hides_the_window(qtbot, run, app_home):
    chat = rig(qtbot, app_home)
    window = chat.window
    run(chat.shown())
    window.activateWindow()
    window.input.setFocus()
    qtbot.keyClick(window.input, Qt.Key.Key_Escape)
    assert not window.isVisible()
    chat.close()


def test_a_temporary_chat_shows_its_banner_and_keeps_nothing(qtbot, run, app_home, docs, memory):
    chat = rig(qtbot, app_home, memory, prompter=Allow())
    window = chat.window

    async def scenario() -> None:
        await chat.shown()
        assert window.temporary_banner.isHidden()
        window.temporary_toggle.click()
        assert window.temporary_banner.isVisible()
        assert window.temporary_banner.text() == "Temporary: nothing is kept or remembered"
        await type_and_send(qtbot, window, f"list files in {docs}")
        await turn_done(window)
        await type_and_send(qtbot, window, "remember that my cat is called Tom")
        await turn_done(window)

    run(scenario())
    assert "notes.txt" in window.transcript.text()  # the turns ran
    assert ConversationStore(memory).conversations() == []
    assert memory.count() == 0  # and nothing was remembered either
    assert window.conversation_list.count() == 0
    chat.close()


def test_a_kept_conversation_is_listed_and_shown_again_after_a_restart(
    qtbot, run, app_home, docs, tmp_path
):
    path = tmp_path / "kept.db"
    first_memory = open_memory(path)
    chat = rig(qtbot, app_home, first_memory, prompter=Allow())

    async def first() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, f"list files in {docs}")
        await turn_done(window)
        await until(lambda: window.conversation_list.count() == 1)

    run(first())
    chat.close()
    first_memory.close()

    memory = open_memory(path)  # a restart: the file read afresh
    again = rig(qtbot, app_home, memory, prompter=Allow())
    window = again.window
    run(again.shown())
    assert window.conversation_list.count() == 1
    item = window.conversation_list.item(0)
    assert item.text().startswith("list files in ")
    assert window.transcript.entries == []

    async def reopen() -> None:
        window.conversation_list.setCurrentItem(item)
        qtbot.mouseClick(
            window.conversation_list.viewport(),
            Qt.MouseButton.LeftButton,
            pos=window.conversation_list.visualItemRect(item).center(),
        )
        await until(lambda: window.transcript.entries)
        await window.settled()

    run(reopen())
    text = window.transcript.text()
    assert f"list files in {docs}" in text
    [card] = cards(window)
    assert card.entry.call.status == "ok"
    assert card.status_text() == "OK"
    card.toggle.click()
    assert "notes.txt" in card.result.text()
    [reply] = replies(window)
    assert "notes.txt" in reply.view.toPlainText()
    again.close()
    memory.close()


def test_deleting_a_conversation_asks_first_then_removes_it_for_good(
    qtbot, run, app_home, docs, memory
):
    chat = rig(qtbot, app_home, memory, prompter=Allow())
    window = chat.window
    history = ConversationStore(memory)

    async def answer(button: str) -> None:
        window.conversation_list.setCurrentRow(0)
        window.delete_button.click()
        await until(lambda: window.findChild(QMessageBox, "confirmation"))
        box = window.findChild(QMessageBox, "confirmation")
        assert box is not None
        assert "for good" in box.text()
        [chosen] = [b for b in box.buttons() if b.text() == button]
        chosen.click()
        await window.settled()

    async def scenario() -> None:
        await chat.shown()
        await type_and_send(qtbot, window, f"list files in {docs}")
        await turn_done(window)
        await until(lambda: window.conversation_list.count() == 1)
        await answer("Cancel")
        assert window.conversation_list.count() == 1
        assert len(history.conversations()) == 1
        await answer("Delete")

    run(scenario())
    assert window.conversation_list.count() == 0
    assert history.conversations() == []
    assert window.transcript.entries == []  # the open conversation went with it
    chat.close()


def test_deleted_messages_cannot_be_read_back(qtbot, run, app_home, docs, memory):
    chat = rig(qtbot, app_home, memory, prompter=Allow())
    window = chat.window
    history = ConversationStore(memory)

    async def scenario() -> None:
        await chat.shown()
        await type_and_send(qtbot, window, f"list files in {docs}")
        await turn_done(window)
        await until(lambda: window.conversation_list.count() == 1)
        window.conversation_list.setCurrentRow(0)
        window.delete_button.click()
        await until(lambda: window.findChild(QMessageBox, "confirmation"))
        box = window.findChild(QMessageBox, "confirmation")
        assert box is not None
        [delete] = [b for b in box.buttons() if b.text() == "Delete"]
        conversation_id = window.conversation_list.item(0).data(Qt.ItemDataRole.UserRole)
        delete.click()
        await window.settled()
        with pytest.raises(ConversationNotFoundError):
            history.messages(conversation_id)

    run(scenario())
    chat.close()


def test_undo_on_a_remembered_fact_forgets_it(qtbot, run, app_home, memory):
    chat = rig(qtbot, app_home, memory)
    window = chat.window

    async def scenario() -> None:
        await chat.shown()
        await type_and_send(qtbot, window, "remember that my cat is called Tom")
        await turn_done(window)

    run(scenario())
    [line] = [w for w in window.transcript.widgets() if isinstance(w, MemoryLine)]
    assert line.label.text() == "Remembered: my cat is called Tom"
    assert line.undo.isVisibleTo(line)
    fact_id = line.entry.fact_id
    assert fact_id is not None
    assert memory.get(fact_id) is not None
    # The CLI's "undo: `chamberlain memory forget …`" is not repeated in the reply.
    assert "chamberlain memory forget" not in window.transcript.text()

    async def undo() -> None:
        line.undo.click()
        await until(lambda: "Forgotten." in line.label.text())
        await window.settled()

    run(undo())
    assert memory.get(fact_id) is None
    assert not line.undo.isVisibleTo(line)
    chat.close()


def test_asked_to_forget_a_fact_the_chat_offers_forget_and_a_click_forgets_it(
    qtbot, run, app_home, memory
):
    """ "forget my bike lock code" shows the remembered fact it matches with a Forget button
    (Alt+G): nothing goes until it is pressed, and no command to type is shown."""
    kept = memory.add("my bike is a green Brompton", sensitivity=Sensitivity.LOW)
    other = memory.add("I like green tea", sensitivity=Sensitivity.LOW)
    chat = rig(qtbot, app_home, memory)
    window = chat.window

    async def scenario() -> None:
        await chat.shown()
        await type_and_send(qtbot, window, "forget about my bike")
        await turn_done(window)

    run(scenario())
    [line] = [w for w in window.transcript.widgets() if isinstance(w, MemoryLine)]
    assert line.label.text() == "Matches what you asked me to forget: “my bike is a green Brompton”"
    assert line.undo.isVisibleTo(line)
    assert line.undo.text() == "For&get"
    assert line.undo.accessibleName() == "Forget this fact"
    assert "chamberlain memory forget" not in window.transcript.text()
    assert memory.get(kept.fact.id) is not None  # shown, not yet forgotten

    async def forget() -> None:
        line.undo.click()
        await until(lambda: "Forgotten." in line.label.text())
        await window.settled()

    run(forget())
    assert memory.get(kept.fact.id) is None
    assert memory.get(other.fact.id) is not None
    assert not line.undo.isVisibleTo(line)
    chat.close()


def test_forget_that_in_another_chat_shows_nothing_of_this_one_and_back_here_shows_its_fact(
    qtbot, run, app_home, memory
):
    """One session serves every conversation: "forget that" in a new chat says nothing was kept
    just before it (never the fact another chat kept); in the chat that kept it, reopened from
    the list, it shows that fact with Forget, and nothing goes without the click."""
    chat = rig(qtbot, app_home, memory)
    window = chat.window

    async def keep_then_elsewhere() -> None:
        await chat.shown()
        await type_and_send(qtbot, window, "remember that my locker at the pool is 14")
        await turn_done(window)
        await until(lambda: window.conversation_list.count() == 1)
        window.new_chat()
        await type_and_send(qtbot, window, "forget that")
        await turn_done(window)

    run(keep_then_elsewhere())
    [nothing] = memory_lines(window)
    assert nothing.label.text().startswith("Nothing was kept just before this in the chat")
    assert not nothing.undo.isVisibleTo(nothing)
    [kept] = memory.facts()
    assert kept.text == "my locker at the pool is 14"

    async def back_there() -> None:
        await until(lambda: window.conversation_list.count() == 2)
        rows = [window.conversation_list.item(i) for i in range(2)]
        [item] = [r for r in rows if r.text().startswith("remember that my locker")]
        await window.open_conversation(item.data(Qt.ItemDataRole.UserRole), item.text())
        await type_and_send(qtbot, window, "forget that")
        await turn_done(window)

    run(back_there())
    shown = memory_lines(window)[-1]
    assert "my locker at the pool is 14" in shown.label.text()
    assert shown.undo.isVisibleTo(shown)
    assert memory.get(kept.id) is not None  # shown, not forgotten
    chat.close()


def test_a_reply_that_itself_says_a_memory_notice_is_shown_whole_with_the_notice_apart(
    qtbot, run, app_home, memory, scripted_server
):
    """The window once cut each memory notice's sentence out of the reply's text; a reply that
    said the same sentence lost it. The reply is now the model's, and the notice its own line."""
    memory.add("I like hiking", sensitivity=Sensitivity.LOW)
    said = 'Already remembered: "I like hiking". You told me so before, and the hills are lovely.'
    proposal = {"text": "I like hiking", "evidence": "I like hiking", "category": "hobbies"}
    answer = json.dumps({"facts": [{**proposal, "sensitivity": "low"}]})
    server = scripted_server([Text(said), Text(answer)])
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    chat = rig(qtbot, app_home, memory, model=model)

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, "I like hiking in the hills")
        await turn_done(window)

    run(scenario())
    window = chat.window
    [reply] = replies(window)
    assert reply.view.toPlainText() == said
    [line] = [w for w in window.transcript.widgets() if isinstance(w, MemoryLine)]
    assert line.label.text() == 'Already remembered: "I like hiking".'
    assert not line.undo.isVisibleTo(line)  # nothing new was kept, so nothing to undo
    [conversation] = ConversationStore(memory).conversations()
    kept = ConversationStore(memory).messages(conversation.id)
    assert [(m.role, m.text) for m in kept] == [
        ("user", "I like hiking in the hills"),
        ("assistant", said),
        ("notice", 'Already remembered: "I like hiking".'),
    ]
    chat.close()
    model.close()


def test_without_a_model_the_window_says_how_to_connect_one(qtbot, run, app_home):
    chat = rig(qtbot, app_home, model_problem="No local model server answered.")
    run(chat.shown())
    hint = chat.window.model_hint
    assert hint.isVisible()
    assert "No language model is connected" in hint.text()
    assert "No local model server answered" in hint.text()
    assert "start a local OpenAI-compatible server" in hint.text()
    chat.close()


def test_without_memory_the_window_says_once_that_conversations_are_not_kept(
    qtbot, run, app_home, docs
):
    chat = rig(qtbot, app_home, prompter=Allow(), memory_problem="The passphrase was wrong.")
    window = chat.window

    async def scenario() -> None:
        await chat.shown()
        for _ in range(2):
            await type_and_send(qtbot, window, f"list files in {docs}")
            await turn_done(window)

    run(scenario())
    note = window.history_note
    assert note.isVisible()
    assert note.text() == "Conversations are not kept this time: The passphrase was wrong."
    assert "not kept" not in window.transcript.text()  # said in one place, once
    assert len(replies(window)) == 2
    chat.close()


def test_a_paused_assistant_refuses_the_message_and_gives_the_text_back(qtbot, run, app_home, docs):
    chat = rig(qtbot, app_home, prompter=Allow())
    window = chat.window
    chat.assistant.set_paused(True)

    async def scenario() -> None:
        await chat.shown()
        await type_and_send(qtbot, window, f"list files in {docs}")
        await until(lambda: any(isinstance(e, NoticeEntry) for e in window.transcript.entries))
        await window.settled()

    run(scenario())
    assert "Not sent. Chamberlain is paused" in window.transcript.text()
    assert "Resume it from the tray menu" in window.transcript.text()
    assert window.input.toPlainText() == f"list files in {docs}"
    assert window.send_button.isEnabled()
    chat.close()


def test_details_show_the_intent_the_allowed_tools_and_the_memories_used(
    qtbot, run, app_home, memory, scripted_server
):
    server = scripted_server([Text("Your cat is called Tom.")])
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    chat = rig(qtbot, app_home, memory, model=model)

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, "remember that my cat is called Tom")
        await turn_done(window)
        await type_and_send(qtbot, window, "what is my cat called")
        await turn_done(window)

    run(scenario())
    reply = replies(chat.window)[-1]
    assert reply.view.toPlainText() == "Your cat is called Tom."
    assert reply.details.isHidden()
    reply.details_button.click()
    details = reply.details.text()
    assert not reply.details.isHidden()
    assert "Understood as: a question about what I remember, confidence" in details
    assert "Tools allowed:" in details
    assert "my cat is called Tom" in details
    chat.close()
    model.close()


def test_a_model_tool_call_streams_its_card_before_the_reply(
    qtbot, run, app_home, docs, scripted_server
):
    server = scripted_server(
        [ToolCalls([("file_list", {"path": str(docs)})]), Text("Two files: notes and budget.")]
    )
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    chat = rig(qtbot, app_home, model=model, prompter=Allow())

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, "which of my documents looks like a budget?")
        await turn_done(window)

    run(scenario())
    kinds = [type(w).__name__ for w in chat.window.transcript.widgets()]
    # The first reply a model writes in a session says which model that is, below it.
    assert kinds == ["UserBubble", "ToolCard", "ReplyBubble", "NoticeLine"]
    assert replies(chat.window)[0].view.toPlainText() == "Two files: notes and budget."
    assert "Answered by scripted at http://127.0.0.1" in chat.window.transcript.text()
    chat.close()
    model.close()


def test_a_long_chat_keeps_few_widgets_however_far_it_is_scrolled(qtbot, run, app_home):
    chat = rig(qtbot, app_home)
    window = chat.window
    transcript = window.transcript
    bar = transcript.verticalScrollBar()
    entries = [UserEntry(body=f"message {n}") for n in range(1000)]

    async def scenario() -> None:
        await chat.shown()
        transcript.load(entries)
        await asyncio.sleep(0.05)
        assert len(transcript.widgets()) == PAGE
        assert transcript.text().endswith("message 999")
        assert "message 975\n" not in transcript.text()

        bar.setValue(0)
        top = transcript.entries[transcript.first].widget
        assert top is not None
        on_screen = top.y() - bar.value()
        await until(lambda: len(transcript.widgets()) == 2 * PAGE)
        await asyncio.sleep(0.05)
        assert bar.value() > 0
        assert top.y() - bar.value() == on_screen  # what was on show stayed where it was

        while transcript.first > 0:  # all the way up to the first message
            bar.setValue(0)
            await asyncio.sleep(0.01)
        assert transcript.text().startswith("message 0\n")
        assert len(transcript.widgets()) <= MAX_LIVE
        assert transcript.later.isVisibleTo(transcript)

        # A message arriving meanwhile waits below; sending one shows the newest again.
        assert transcript.append(UserEntry(body="a new one")) is None
        transcript.scroll_to_bottom()
        await asyncio.sleep(0.05)
        assert transcript.text().endswith("message 999\na new one")
        for n in range(MAX_LIVE * 2):  # following the bottom drops the oldest widgets
            transcript.append(UserEntry(body=f"new {n}"))
        await asyncio.sleep(0.05)
        assert transcript.at_bottom()

    run(scenario())
    assert len(transcript.widgets()) <= MAX_LIVE
    assert transcript.text().endswith(f"new {MAX_LIVE * 2 - 1}")
    assert len(transcript.entries) == 1001 + MAX_LIVE * 2
    chat.close()


def test_a_failed_request_shows_its_reply_as_a_sentence_marked_as_failed(
    qtbot, run, app_home, scripted_server
):
    server = scripted_server([Raw.error(500, "the model crashed")])
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    chat = rig(qtbot, app_home, model=model)

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, "tell me a joke")
        await turn_done(window)

    run(scenario())
    [reply] = replies(chat.window)
    text = reply.view.toPlainText()
    assert text.startswith("The model failed")
    assert "the model crashed" in text
    assert "Traceback" not in text
    assert reply.property("failed") is True
    assert chat.window.send_button.isEnabled()
    chat.close()
    model.close()


def test_html_in_a_reply_is_shown_as_text_never_rendered(qtbot):
    """A model (perhaps echoing a web page) writes raw HTML: it cannot hide text or restyle it."""
    from app.chat_view import MarkdownView

    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown('**Done.** <span style="font-size:0px">and I also ran rm -rf ~</span>')
    shown = view.toPlainText()
    assert shown.startswith("Done.")  # markdown still renders
    assert '<span style="font-size:0px">' in shown  # the markup is visible, not applied


def test_a_server_whose_tools_the_request_went_without_is_named_below_the_reply(
    qtbot, run, app_home, scripted_server
):
    from broker.settings import Settings
    from tools.mcp.config import McpServerConfig, McpSettings

    server = scripted_server(["I found nothing about a vault code."])
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    settings = Settings()
    missing = McpServerConfig(command="chamberlain-no-such-mcp-server")
    settings.mcp = McpSettings(servers={"vault": missing})
    chat = rig(qtbot, app_home, model=model, settings=settings)

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, "look through my files for the vault code")
        await turn_done(window)

    run(scenario())
    notices = [e.body for e in chat.window.transcript.entries if isinstance(e, NoticeEntry)]
    assert (
        "The MCP server 'vault' could not be started (the program "
        "'chamberlain-no-such-mcp-server' is not installed (not on PATH)); its tools were left "
        "out of this request — Test in Settings › MCP servers tries again"
    ) in notices
    [reply] = replies(chat.window)
    assert "vault code" in reply.view.toPlainText()
    chat.close()
    model.close()


# -- consent in the chat: Approve, Edit…, Reject, and the Memory window following along ---------


def memory_lines(window: ChatWindow) -> list[MemoryLine]:
    return [w for w in window.transcript.widgets() if isinstance(w, MemoryLine)]


def open_memory_window(qtbot: Any, chat: Rig) -> Any:
    """The Memory window on the chat's own QtSession, open beside it (as the app has it)."""
    from app.windows.memory import MemoryWindow

    shown = MemoryWindow(chat.assistant)
    qtbot.addWidget(shown)
    shown.show()
    return shown


def pending_texts(window: Any) -> list[str]:
    return [f.text for f in window.pending_model.facts]


def fact_texts(window: Any) -> list[str]:
    return [f.text for f in window.facts_model.facts]


async def ask_to_remember(qtbot: Any, chat: Rig, text: str) -> MemoryLine:
    window = await chat.shown()
    await type_and_send(qtbot, window, f"remember that {text}")
    await turn_done(window)
    [line] = [ln for ln in memory_lines(window) if text in ln.entry.text]
    return line


def test_approving_a_waiting_fact_in_the_chat_remembers_it_and_the_open_memory_window_shows_it(
    qtbot, run, app_home, memory
):
    chat = rig(qtbot, app_home, memory)
    window = chat.window
    shelf = open_memory_window(qtbot, chat)

    async def scenario() -> MemoryLine:
        line = await ask_to_remember(qtbot, chat, "I take insulin every morning")
        # The turn's own write reaches the open Memory window, without F5.
        await until(lambda: pending_texts(shelf) == ["I take insulin every morning"])
        return line

    line = run(scenario())
    fact_id = line.entry.fact_id
    assert fact_id is not None
    text = line.label.text()
    assert text.startswith("To remember “I take insulin every morning” I need your approval")
    assert "chamberlain memory" not in window.transcript.text()
    assert [b.isVisibleTo(line) for b in (line.approve, line.edit, line.reject)] == [True] * 3
    assert not line.undo.isVisibleTo(line)
    assert line.approve.accessibleName() == "Approve: remember this"
    assert line.approve.accessibleDescription() == "I take insulin every morning"

    async def approve_from_the_keyboard() -> None:
        window.activateWindow()
        window.input.setFocus()
        qtbot.keyClick(window.input, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)
        await until(lambda: "Approved." in line.label.text())
        await window.settled()
        await until(lambda: fact_texts(shelf) == ["I take insulin every morning"])

    run(approve_from_the_keyboard())
    approved = memory.get(fact_id)
    assert approved is not None
    assert approved.status is FactStatus.ACTIVE
    assert line.label.text() == "Remembered: I take insulin every morning  —  Approved."
    assert not line.approve.isVisibleTo(line)
    assert line.undo.isVisibleTo(line)  # a remembered fact keeps Undo
    assert pending_texts(shelf) == []
    assert window.input.hasFocus()  # the keyboard is not left on a button that went away
    chat.close()


def test_rejecting_a_waiting_fact_keeps_nothing_of_it_and_the_memory_window_drops_it(
    qtbot, run, app_home, memory
):
    chat = rig(qtbot, app_home, memory)
    shelf = open_memory_window(qtbot, chat)

    async def scenario() -> MemoryLine:
        line = await ask_to_remember(qtbot, chat, "my doctor says I have asthma")
        await until(lambda: pending_texts(shelf) == ["my doctor says I have asthma"])
        line.reject.click()
        await until(lambda: "Rejected" in line.label.text())
        await chat.window.settled()
        await until(lambda: pending_texts(shelf) == [])
        return line

    line = run(scenario())
    assert line.entry.fact_id is not None
    assert memory.get(line.entry.fact_id) is None
    assert memory.count() == 0
    assert line.label.text() == "Not remembered: my doctor says I have asthma  —  Rejected."
    assert not any(b.isVisibleTo(line) for b in (line.approve, line.edit, line.reject, line.undo))
    chat.close()


def test_editing_a_waiting_fact_remembers_the_persons_own_words_and_esc_only_cancels(
    qtbot, run, app_home, memory
):
    chat = rig(qtbot, app_home, memory)
    window = chat.window
    shelf = open_memory_window(qtbot, chat)

    async def scenario() -> MemoryLine:
        line = await ask_to_remember(qtbot, chat, "I take insulin every morning")
        line.edit.click()
        assert line.editor.isVisibleTo(line)
        assert line.editor.text() == "I take insulin every morning"
        assert line.editor.hasFocus()
        qtbot.keyClick(line.editor, Qt.Key.Key_Escape)  # cancels the edit, not the window
        assert window.isVisible()
        assert not line.editor.isVisibleTo(line)
        assert line.approve.isVisibleTo(line)
        line.edit.click()
        line.editor.selectAll()
        qtbot.keyClicks(line.editor, "I take insulin at breakfast")
        qtbot.keyClick(line.editor, Qt.Key.Key_Return)
        await until(lambda: "Your edit." in line.label.text())
        await window.settled()
        await until(lambda: fact_texts(shelf) == ["I take insulin at breakfast"])
        return line

    line = run(scenario())
    [kept] = memory.facts(status=FactStatus.ACTIVE)
    assert (kept.text, kept.source) == ("I take insulin at breakfast", FactSource.USER_EDIT)
    assert kept.sensitivity is Sensitivity.SECRET  # an edit never makes it shareable
    assert memory.facts(status=FactStatus.PENDING) == []
    assert line.entry.fact_id == kept.id  # Undo forgets what is remembered now
    assert line.label.text() == "Remembered: I take insulin at breakfast  —  Your edit."
    assert pending_texts(shelf) == []
    chat.close()


def test_undo_in_the_chat_takes_the_fact_out_of_the_open_memory_window_without_a_reload(
    qtbot, run, app_home, memory
):
    chat = rig(qtbot, app_home, memory)
    shelf = open_memory_window(qtbot, chat)

    async def scenario() -> None:
        line = await ask_to_remember(qtbot, chat, "my cat is called Tom")
        await until(lambda: fact_texts(shelf) == ["my cat is called Tom"])
        line.undo.click()
        await until(lambda: fact_texts(shelf) == [])

    run(scenario())
    assert memory.count() == 0
    chat.close()


def test_a_fact_approved_in_the_memory_window_is_shown_approved_in_the_chat(
    qtbot, run, app_home, memory
):
    chat = rig(qtbot, app_home, memory)
    shelf = open_memory_window(qtbot, chat)

    async def scenario() -> MemoryLine:
        line = await ask_to_remember(qtbot, chat, "I take insulin every morning")
        await until(lambda: pending_texts(shelf) == ["I take insulin every morning"])
        assert line.entry.fact_id is not None
        await shelf.approve(line.entry.fact_id)
        await until(lambda: "Approved in Memory." in line.label.text())
        return line

    line = run(scenario())
    assert not line.approve.isVisibleTo(line)
    assert line.undo.isVisibleTo(line)
    chat.close()


def test_only_the_newest_waiting_line_has_the_alt_keys_so_none_means_two_things(
    qtbot, run, app_home, memory
):
    chat = rig(qtbot, app_home, memory)

    async def scenario() -> None:
        await ask_to_remember(qtbot, chat, "I take insulin every morning")
        await ask_to_remember(qtbot, chat, "my doctor says I have asthma")
        await ask_to_remember(qtbot, chat, "my cat is called Tom")

    run(scenario())
    older, newer, kept = memory_lines(chat.window)
    assert [older.entry.state, newer.entry.state, kept.entry.state] == [
        "waiting",
        "waiting",
        "kept",
    ]
    assert [b.text() for b in (newer.approve, newer.edit, newer.reject)] == [
        "&Approve",
        "&Edit…",
        "&Reject",
    ]
    assert kept.undo.text() == "&Undo"
    assert "&" not in "".join(b.text() for b in (older.approve, older.edit, older.reject))
    mnemonics = [
        b.text().split("&")[1][0].lower()
        for b in chat.window.findChildren(QAbstractButton)
        if b.isVisibleTo(chat.window) and "&" in b.text()
    ]
    assert len(mnemonics) == len(set(mnemonics)), mnemonics
    chat.close()


def test_a_waiting_line_kept_with_the_conversation_offers_its_buttons_again_after_a_restart(
    qtbot, run, app_home, tmp_path
):
    path = tmp_path / "kept.db"
    first_memory = open_memory(path)
    chat = rig(qtbot, app_home, first_memory)

    async def first() -> str | None:
        line = await ask_to_remember(qtbot, chat, "I take insulin every morning")
        await chat.window.settled()
        return line.entry.fact_id

    fact_id = run(first())
    chat.close()
    first_memory.close()

    memory = open_memory(path)  # a restart: the file read afresh
    again = rig(qtbot, app_home, memory)

    async def reopened() -> MemoryLine:
        window = await again.shown()
        await until(lambda: window.conversation_list.count() == 1)
        await window.open_conversation(
            window.conversation_list.item(0).data(Qt.ItemDataRole.UserRole)
        )
        [line] = memory_lines(window)
        line.approve.click()
        await until(lambda: "Approved." in line.label.text())
        return line

    line = run(reopened())
    assert line.entry.fact_id == fact_id
    fact = memory.get(fact_id)
    assert fact is not None
    assert fact.status is FactStatus.ACTIVE
    again.close()
    memory.close()


def test_a_turn_that_only_asks_for_consent_shows_its_details_under_the_memory_line_now_and_kept(
    qtbot, run, app_home, tmp_path
):
    """A fact waiting for consent is the whole answer (the reply has no text): the turn's
    Details sit at its end, under the memory line, as under other turns' replies, never alone
    above it; so too when the conversation is shown again after a restart."""
    path = tmp_path / "kept.db"
    first_memory = open_memory(path)
    chat = rig(qtbot, app_home, first_memory)

    def shape(window: ChatWindow) -> list[str]:
        shown = [w for w in window.transcript.widgets() if w.isVisibleTo(window)]
        return [type(w).__name__ for w in shown]

    def details_under_the_line(window: ChatWindow) -> None:
        [line] = memory_lines(window)
        [reply] = replies(window)
        assert reply.details_button.isVisibleTo(window)
        assert not reply.view.isVisibleTo(window)  # no text to show
        top = reply.details_button.mapTo(window, reply.details_button.rect().topLeft()).y()
        assert top >= line.mapTo(window, line.rect().bottomLeft()).y()

    async def first() -> list[str]:
        await ask_to_remember(qtbot, chat, "I take insulin every morning")
        await chat.window.settled()
        return shape(chat.window)

    assert run(first())[-2:] == ["MemoryLine", "ReplyBubble"]
    details_under_the_line(chat.window)
    chat.close()
    first_memory.close()

    memory = open_memory(path)  # a restart: the conversation read afresh
    again = rig(qtbot, app_home, memory)

    async def reopened() -> list[str]:
        window = await again.shown()
        await until(lambda: window.conversation_list.count() == 1)
        await window.open_conversation(
            window.conversation_list.item(0).data(Qt.ItemDataRole.UserRole)
        )
        await window.settled()
        return shape(window)

    assert run(reopened())[-2:] == ["MemoryLine", "ReplyBubble"]
    details_under_the_line(again.window)
    again.close()
    memory.close()


def test_the_consent_buttons_are_reached_with_tab_from_the_message_box(
    qtbot, run, app_home, memory
):
    from PySide6.QtWidgets import QApplication

    chat = rig(qtbot, app_home, memory)

    async def scenario() -> MemoryLine:
        return await ask_to_remember(qtbot, chat, "I take insulin every morning")

    line = run(scenario())
    window = chat.window
    window.activateWindow()
    window.input.setFocus()
    reached = []
    for _ in range(40):
        focus = QApplication.focusWidget()
        assert focus is not None
        qtbot.keyClick(focus, Qt.Key.Key_Tab)
        reached.append(QApplication.focusWidget())
        if reached[-1] is line.reject:
            break
    assert reached[-3:] == [line.approve, line.edit, line.reject]

    async def rejected() -> None:
        qtbot.keyClick(line.reject, Qt.Key.Key_Space)
        await until(lambda: "Rejected" in line.label.text())
        await window.settled()

    run(rejected())
    assert memory.count() == 0
    chat.close()


# --- conversations: each turn is asked within the open chat ------------------------------------


def said(request: dict[str, Any]) -> list[tuple[str, str]]:
    """What the model was given before the new message: (role, text), the system's left out."""
    return [
        (m["role"], m.get("content") or "") for m in request["messages"] if m["role"] != "system"
    ]


def no_extraction() -> Any:
    """Settings under which the model is asked for replies only (no memory proposals), so the
    scripted answers go to the turns in order."""
    from broker.settings import Settings

    settings = Settings()
    settings.memory.extract = False
    return settings


def asked(server: Any, text: str) -> dict[str, Any]:
    """The request that asked the model to answer `text` (memory's own requests aside)."""
    [found] = [r for r in server.requests if r["messages"][-1].get("content") == text]
    return found


async def reply_count(window: ChatWindow, count: int) -> None:
    await until(lambda: window.send_button.isEnabled() and len(replies(window)) == count)
    await window.settled()


def test_the_second_turn_carries_the_first_and_new_chat_starts_afresh(
    qtbot, run, app_home, memory, scripted_server
):
    server = scripted_server(
        ["Paris is the capital of France.", "About 2.1 million people.", "Hello!"]
    )
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    chat = rig(qtbot, app_home, memory, model=model, settings=no_extraction())

    async def scenario() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, "what's the capital of France?")
        await reply_count(window, 1)
        await type_and_send(qtbot, window, "and its population?")
        await reply_count(window, 2)
        qtbot.mouseClick(window.new_button, Qt.MouseButton.LeftButton)
        await type_and_send(qtbot, window, "hi")
        await reply_count(window, 1)

    run(scenario())
    assert said(asked(server, "and its population?")) == [
        ("user", "what's the capital of France?"),
        ("assistant", "Paris is the capital of France."),
        ("user", "and its population?"),
    ]
    assert said(asked(server, "hi")) == [("user", "hi")]
    chat.close()
    model.close()


def test_a_past_conversation_reopened_after_a_restart_is_asked_within_its_turns(
    qtbot, run, app_home, docs, tmp_path, scripted_server
):
    server = scripted_server(
        [
            ToolCalls([("file_list", {"path": str(docs)})]),
            "Two files: notes.txt and budget-2026.ods.",
            "budget-2026.ods does.",
        ]
    )
    path = tmp_path / "kept.db"
    first_memory = open_memory(path)
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    chat = rig(
        qtbot, app_home, first_memory, model=model, prompter=Allow(), settings=no_extraction()
    )

    async def first() -> None:
        window = await chat.shown()
        await type_and_send(qtbot, window, "which files are in my documents?")
        await reply_count(window, 1)
        await until(lambda: window.conversation_list.count() == 1)

    run(first())
    chat.close()
    first_memory.close()

    memory = open_memory(path)  # a restart: the file read afresh
    again = rig(qtbot, app_home, memory, model=model, prompter=Allow(), settings=no_extraction())
    window = again.window

    async def reopen_and_follow_up() -> None:
        await again.shown()
        item = window.conversation_list.item(0)
        window.conversation_list.setCurrentItem(item)
        qtbot.mouseClick(
            window.conversation_list.viewport(),
            Qt.MouseButton.LeftButton,
            pos=window.conversation_list.visualItemRect(item).center(),
        )
        await until(lambda: window.transcript.entries)
        await window.settled()
        # The reopened chat shows its tool call once, before its reply.
        assert [type(w).__name__ for w in window.transcript.widgets()][:3] == [
            "UserBubble",
            "ToolCard",
            "ReplyBubble",
        ]
        assert len(cards(window)) == 1
        await type_and_send(qtbot, window, "thanks! which of those sounds like money?")
        await reply_count(window, 2)

    run(reopen_and_follow_up())
    follow_up = asked(server, "thanks! which of those sounds like money?")["messages"]
    roles = [m["role"] for m in follow_up if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    [tool] = [m for m in follow_up if m["role"] == "tool"]
    assert "notes.txt" in tool["content"]
    assert "budget-2026.ods" in tool["content"]
    assert follow_up[-1]["content"] == "thanks! which of those sounds like money?"
    # The follow-up was kept in the same conversation, not a new one.
    assert window.conversation_list.count() == 1
    assert [m.role for m in ConversationStore(memory).messages(window.conversation_id)].count(
        "user"
    ) == 2
    again.close()
    memory.close()
    model.close()


def test_a_conversation_kept_by_the_command_line_chat_opens_here_and_goes_on(
    qtbot, run, app_home, docs
):
    from tests.support.cli import run_cli

    user = docs.parent
    proc = run_cli(
        user,
        "chat",
        "--llm",
        "none",
        "--approve",
        "file_read=once",
        # Unencrypted, so this test can open the same file the command line kept it in.
        env={"CHAMBERLAIN_MEMORY__ENCRYPTION": "off"},
        stdin="list files in ~/Documents\n",
    )
    assert proc.returncode == 0, proc.stderr
    memory = open_memory(user / ".chamberlain" / "memory.db")
    chat = rig(qtbot, app_home, memory, prompter=Allow())
    window = chat.window

    async def open_and_follow_up() -> None:
        await chat.shown()
        item = window.conversation_list.item(0)
        assert item.text() == "list files in ~/Documents"
        window.conversation_list.setCurrentItem(item)
        qtbot.mouseClick(
            window.conversation_list.viewport(),
            Qt.MouseButton.LeftButton,
            pos=window.conversation_list.visualItemRect(item).center(),
        )
        await until(lambda: window.transcript.entries)
        await window.settled()
        [card] = cards(window)
        assert card.status_text() == "OK"
        card.toggle.click()
        assert "notes.txt" in card.result.text()
        # The listing the command line showed is what "the second one" points at here.
        await type_and_send(qtbot, window, "read the second one")
        await reply_count(window, 2)

    run(open_and_follow_up())
    assert "hello" in replies(window)[-1].view.toPlainText()
    chat.close()
    memory.close()


def test_a_temporary_chat_follows_its_own_turns_and_keeps_none_of_them(
    qtbot, run, app_home, memory, scripted_server
):
    server = scripted_server(["Paris.", "About 2.1 million."])
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    chat = rig(qtbot, app_home, memory, model=model, settings=no_extraction())

    async def scenario() -> None:
        window = await chat.shown()
        window.temporary_toggle.click()
        await type_and_send(qtbot, window, "what's the capital of France?")
        await reply_count(window, 1)
        await type_and_send(qtbot, window, "and its population?")
        await reply_count(window, 2)

    run(scenario())
    assert said(asked(server, "and its population?"))[:2] == [
        ("user", "what's the capital of France?"),
        ("assistant", "Paris."),
    ]
    assert ConversationStore(memory).conversations() == []
    chat.close()
    model.close()


def test_a_fact_waiting_from_the_command_line_chat_can_be_approved_in_its_conversation_here(
    qtbot, run, app_home, docs
):
    from tests.support.cli import run_cli

    user = docs.parent
    proc = run_cli(
        user,
        "chat",
        "--llm",
        "none",
        env={"CHAMBERLAIN_MEMORY__ENCRYPTION": "off"},
        stdin="remember that I take insulin every morning\n",
    )
    assert proc.returncode == 0, proc.stderr
    memory = open_memory(user / ".chamberlain" / "memory.db")
    chat = rig(qtbot, app_home, memory)

    async def reopened() -> MemoryLine:
        window = await chat.shown()
        await until(lambda: window.conversation_list.count() == 1)
        await window.open_conversation(
            window.conversation_list.item(0).data(Qt.ItemDataRole.UserRole)
        )
        [line] = memory_lines(window)
        line.approve.click()
        await until(lambda: "Approved." in line.label.text())
        return line

    line = run(reopened())
    assert line.entry.fact_id is not None
    fact = memory.get(line.entry.fact_id)
    assert fact is not None
    assert fact.status is FactStatus.ACTIVE
    assert "insulin" in fact.text
    chat.close()
    memory.close()


# A lasting fact inside a remark: the router reads talk (it keeps a bare "I'm allergic to
# shellfish."), and the offer catches the fact.
ALLERGY_REMARK = "I'm allergic to shellfish, which made the wedding buffet interesting."


def test_a_fact_said_without_remember_is_offered_and_one_click_remembers_it(
    qtbot, run, app_home, memory
):
    """No model, and a fact the router reads as talk: the chat says it kept nothing and offers
    Remember; the click runs a memory write of the person's words, whose health fact then waits
    for Approve as any would."""
    chat = rig(qtbot, app_home, memory)
    window = chat.window

    async def offered() -> MemoryLine:
        await chat.shown()
        await type_and_send(qtbot, window, ALLERGY_REMARK)
        await turn_done(window)
        [line] = memory_lines(window)
        return line

    line = run(offered())
    assert line.entry.state == "offered"
    assert line.label.text() == f"I did not keep this: “{ALLERGY_REMARK}” Remember it?"
    assert line.remember.isVisibleTo(line)
    assert not any(b.isVisibleTo(line) for b in (line.approve, line.reject, line.undo))
    assert memory.facts() == []

    async def click() -> MemoryLine:
        qtbot.mouseClick(line.remember, Qt.MouseButton.LeftButton)
        await until(lambda: len(memory_lines(window)) == 2)
        await turn_done(window)
        return memory_lines(window)[1]

    waiting = run(click())
    assert not line.remember.isVisibleTo(line)
    assert "You said yes." in line.label.text()
    assert waiting.entry.state == "waiting"
    assert waiting.approve.isVisibleTo(waiting)
    [fact] = memory.facts()
    assert fact.text == ALLERGY_REMARK.rstrip(".")
    assert fact.status is FactStatus.PENDING
    chat.close()
