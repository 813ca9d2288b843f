"""The words the chat window and the permission dialog show a person: tools in words, never an
id such as `file_list` or `system_info`; a call that never ran says so, with no duration; window
titles without the app's name (Qt adds it).

Real parts: real widgets offscreen, a real Session on a real home and files, real turns through
the QtSession on a qasync loop, and the question's own deadline on a ManualClock (the session's
clock): the prompter that nobody answers only moves that clock, as the minute passing would.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QAbstractButton, QLabel, QPlainTextEdit, QTextEdit, QWidget

from app.chat import ChatWindow
from app.chat_entries import Details, ToolCall, ToolEntry
from app.chat_view import ToolCard
from app.passphrase import PassphraseDialog
from app.permission_dialog import PermissionDialog
from app.permission_prompt import QuestionView
from app.qt_session import QtSession
from app.windows.words import TOOL_WORDS, waiting_words
from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import PermissionQuestion
from core.clock import ManualClock, SystemClock
from tests.app.gui.conftest import make_session, until
from tests.app.gui.test_chat_window import Allow, Deny, cards, replies, type_and_send
from tests.support.openai_server import ToolCalls
from tests.support.prompts import make_request
from tools.manual import Capability

# Every built-in tool's id and every capability's id: none may reach a person's eyes.
RAW_IDS = re.compile(
    r"\b(" + "|".join([*TOOL_WORDS, *(c.value for c in Capability)]) + r")\b|\(\*\)|: \*"
)


def raw_ids(text: str) -> list[str]:
    return [match.group() for match in RAW_IDS.finditer(text)]


class NobodyAnswers:
    """A prompter nobody answers: it keeps the question and, when told, moves the session's
    clock past the question's deadline, as a minute passing with nobody at the screen would."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.questions: list[PermissionQuestion] = []

    def present(self, question: PermissionQuestion) -> None:
        self.questions.append(question)

    def walk_away(self) -> None:
        self.clock.advance(self.questions[-1].request.timeout_s + 1)


@pytest.fixture
def docs(app_home: Path) -> Path:
    folder = app_home.parent / "user" / "Documents"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("hello\n")
    return folder


def chat_window(qtbot: Any, home: Path, **options: Any) -> tuple[ChatWindow, QtSession]:
    assistant = QtSession(make_session(home, **options))
    window = ChatWindow(assistant, lambda: None)
    qtbot.addWidget(window)
    window.resize(900, 650)
    return window, assistant


def test_while_a_question_is_open_the_chat_names_the_tool_in_words_not_its_id(
    qtbot, run, app_home, docs
):
    clock = ManualClock()
    nobody = NobodyAnswers(clock)
    window, assistant = chat_window(qtbot, app_home, prompter=nobody, clock=clock)

    async def scenario() -> str:
        window.show()
        await window.settled()
        await type_and_send(qtbot, window, f"list files in {docs}")
        await until(lambda: nobody.questions and window.hint.isVisible())
        waiting = window.hint.text()
        nobody.walk_away()
        await until(lambda: window.send_button.isEnabled() and replies(window))
        await window.settled()
        return waiting

    waiting = run(scenario())
    assert waiting == f"Waiting for your permission: List a folder ({docs})…"
    # The call nobody allowed never ran: it says so, and has no duration.
    [card] = cards(window)
    assert card.status_text() == "Not run"
    assert card.reason.text() == (
        "Nobody answered the permission question in time, so it did not run."
    )
    assert card.duration.text() == ""
    assert card.tool.text() == "List a folder"
    shown = " ".join((card.tool.text(), card.status_text(), card.reason.text(), waiting))
    assert "Timed out" not in shown
    assert raw_ids(shown) == []
    [reply] = replies(window)
    said = reply.view.toPlainText()
    assert said == (
        "I did not list a folder: nobody answered the permission question within 60 s, "
        "so it was denied."
    )
    assert raw_ids(window.transcript.text()) == []
    window.hide()
    assistant.close()


def test_a_call_the_person_denied_says_so_in_words_on_its_card_and_in_the_reply(
    qtbot, run, app_home, docs
):
    window, assistant = chat_window(qtbot, app_home, prompter=Deny())

    async def scenario() -> None:
        window.show()
        await window.settled()
        await type_and_send(qtbot, window, f"read {docs}/notes.txt")
        await until(lambda: window.send_button.isEnabled() and replies(window))
        await window.settled()

    run(scenario())
    [card] = cards(window)
    assert (card.tool.text(), card.status_text()) == ("Read a file", "Denied")
    assert card.reason.text() == "The permission was not given, so it did not run."
    assert card.duration.text() == ""
    [reply] = replies(window)
    assert reply.view.toPlainText() == (
        f"I did not read a file: you did not give permission to read files ({docs}/notes.txt)."
    )
    assert raw_ids(window.transcript.text()) == []
    window.hide()
    assistant.close()


def test_a_call_the_model_sent_broken_arguments_for_says_not_run_and_why_with_no_duration(
    qtbot, run, app_home, docs, scripted_server
):
    server = scripted_server([ToolCalls([("file_read", '{"path": ')]), "I could not read it."])
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    window, assistant = chat_window(qtbot, app_home, prompter=Allow(), model=model)

    async def scenario() -> None:
        window.show()
        await window.settled()
        await type_and_send(qtbot, window, "what does the shopping list file say?")
        await until(lambda: window.send_button.isEnabled() and replies(window))
        await window.settled()

    run(scenario())
    [card] = cards(window)
    assert (card.tool.text(), card.status_text()) == ("Read a file", "Not run")
    assert card.reason.text().startswith("arguments are not valid JSON")
    assert card.duration.text() == ""  # it read "Error 0 ms"
    window.hide()
    assistant.close()
    model.close()


def test_a_tool_that_ran_keeps_its_duration_and_its_name_in_words(qtbot, run, app_home, docs):
    window, assistant = chat_window(qtbot, app_home, prompter=Allow())

    async def scenario() -> None:
        window.show()
        await window.settled()
        await type_and_send(qtbot, window, f"list files in {docs}")
        await until(lambda: window.send_button.isEnabled() and cards(window))
        await window.settled()

    run(scenario())
    [card] = cards(window)
    assert card.status_text() == "OK"
    assert re.fullmatch(r"\d+ ms|\d+\.\d s", card.duration.text())
    assert card.accessibleName() == "List a folder: OK"
    window.hide()
    assistant.close()


def test_the_waiting_hint_never_shows_a_tool_id_or_a_star_for_any_scope():
    # "Look up system information" covers anything: a star means nothing to a person.
    assert (
        waiting_words("system_info", Capability.SYSTEM_READ, "*")
        == "Waiting for your permission: Look up system information…"
    )
    for tool in TOOL_WORDS:
        assert raw_ids(waiting_words(tool, Capability.FILE_READ, "*")) == []
    # An MCP tool has no words of ours: its own name, escaped (it comes from its server).
    assert waiting_words("notes__write\u202e", Capability.MCP_WRITE, "*") == (
        "Waiting for your permission: notes__write\\u202e…"
    )


def test_a_card_kept_before_calls_that_never_ran_lost_their_duration_says_not_run(qtbot):
    kept = {"call_id": "c1", "tool": "system_info", "capability": "system_read"}
    kept |= {"status": "timeout", "duration_s": 0.0, "reason": "nobody answered the "}
    kept["reason"] += "system_read prompt within 60 s, so it was denied"
    card = ToolCard(ToolEntry(call=ToolCall.from_meta(kept)))
    qtbot.addWidget(card)
    text = " ".join((card.tool.text(), card.capability.text(), card.status_text()))
    text += " " + card.reason.text() + " " + card.duration.text()
    assert card.tool.text() == "Look up system information"
    assert card.status_text() == "Not run"
    assert card.duration.text() == ""
    assert raw_ids(text) == []


def test_a_tool_that_timed_out_while_running_still_says_timed_out_with_its_duration(qtbot):
    call = ToolCall("c2", "web_fetch", "web_access", status="timeout", duration_s=30.0)
    call.reason = "the page did not answer within 30 s"
    card = ToolCard(ToolEntry(call=call))
    qtbot.addWidget(card)
    assert card.status_text() == "Timed out"
    assert card.duration.text() == "30.0 s"
    assert card.reason.text() == "the page did not answer within 30 s"


def test_a_turns_details_say_how_it_was_understood_and_the_allowed_tools_in_words():
    details = Details(intent="file_task", allowed_tools=["file_list", "file_read"])
    details.confidence, details.source = 0.93, "heuristic"
    [understood, tools, *_] = details.lines()
    assert understood == "Understood as: a request about your files, confidence 0.93 (heuristic)"
    assert tools == "Tools allowed: List a folder, Read a file"


@pytest.mark.parametrize("model_initiated", [False, True], ids=["asked", "model's own"])
def test_the_permission_dialog_names_the_tool_in_words_in_every_row(qtbot, model_initiated):
    request = make_request(
        capability=Capability.SYSTEM_READ,
        scope="*",
        tool="system_info",
        arguments={},
        user_scope=not model_initiated,
    )
    question = QuestionView(PermissionQuestion(request, SystemClock()))
    dialog = PermissionDialog(question, activation_delay_s=0)
    qtbot.addWidget(dialog)
    dialog.show()
    question.start()
    qtbot.waitUntil(dialog.allow_button.isEnabled, timeout=2000)
    shown = _texts(dialog)
    assert _texts(dialog.rows["Tool"]) == ["Look up system information"]
    assert ("You asked for this" in shown) != model_initiated
    assert [text for text in shown if raw_ids(text)] == []
    # What a screen reader announces when it appears says the same words.
    assert "Look up system information" in dialog.accessibleDescription()
    assert raw_ids(dialog.accessibleDescription()) == []


def _texts(widget: QWidget) -> list[str]:
    """Every text the widget and its children show: labels, text boxes, buttons."""
    texts = []
    for child in [widget, *widget.findChildren(QWidget)]:
        if not child.isVisibleTo(widget) and child is not widget:
            continue
        if isinstance(child, QLabel | QAbstractButton):
            texts.append(child.text())
        elif isinstance(child, QPlainTextEdit | QTextEdit):
            texts.append(child.toPlainText())
    return [text for text in texts if text]


def test_window_titles_leave_the_apps_name_to_qt(qtbot, app_home):
    window, assistant = chat_window(qtbot, app_home)
    dialog = PassphraseDialog(new=True)
    qtbot.addWidget(dialog)
    assert window.windowTitle() == "Chat"
    assert dialog.windowTitle() == "Memory passphrase"
    assistant.close()


def test_a_listing_question_names_the_folder_it_lists_as_a_folder(qtbot, tmp_path):
    from tools.manual import CallPlan

    folder = tmp_path / "Documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    asked = {}
    for tool, path in (("file_list", folder), ("file_read", folder / "notes.txt")):
        request = make_request(
            scope=str(folder),
            tool=tool,
            arguments={"path": str(path)},
            plan=CallPlan(files=(str(path),)),
        )
        question = QuestionView(PermissionQuestion(request, SystemClock()))
        dialog = PermissionDialog(question, activation_delay_s=0)
        qtbot.addWidget(dialog)
        asked[tool] = {label: _texts(box) for label, box in dialog.rows.items()}
    assert asked["file_list"]["Folder"] == [str(folder)]
    assert asked["file_list"]["Tool"] == ["List a folder"]
    assert asked["file_read"]["File"] == [str(folder / "notes.txt")]
    assert asked["file_read"]["Tool"] == ["Read a file"]


def test_calls_the_broker_refused_say_why_in_words_on_their_cards_and_the_audit_keeps_the_ids(
    qtbot, run, app_home, docs, scripted_server
):
    """The broker's refusal reasons reach the card as they are: a tool this request does not
    allow and a tool that does not exist are said in words, no tool or capability id; the
    audit log keeps the id of each call."""
    server = scripted_server(
        [
            ToolCalls([("system_execute", {"command": "rm notes.txt"}), ("wipe_disk", {})]),
            "I could not do that.",
        ]
    )
    model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
    window, assistant = chat_window(qtbot, app_home, prompter=Allow(), model=model)

    async def scenario() -> None:
        window.show()
        await window.settled()
        await type_and_send(qtbot, window, "what does the shopping list file say?")
        await until(lambda: window.send_button.isEnabled() and replies(window))
        await window.settled()

    run(scenario())
    first, second = cards(window)
    assert first.tool.text() == "Run a command"
    assert first.reason.text() == "this request does not allow Chamberlain to run a command"
    assert second.reason.text() == "there is no tool named 'wipe_disk' in this turn"
    for card in (first, second):
        assert raw_ids(card.reason.text()) == []
    audit = (app_home / "audit.jsonl").read_text()
    assert '"tool":"system_execute"' in audit.replace(" ", "")
    assert '"tool":"wipe_disk"' in audit.replace(" ", "")
    window.hide()
    assistant.close()
    model.close()
