# ruff: noqa: F811 - the desktop fixtures imported from tests/app/gui/conftest.py are used by name
"""What the person approves is what runs: prompts rendered from structure, one prompt, one clock.

Each case of issue 20 ("What the person approves is not what runs", the Always downgrade, the
three state machines and two clocks) as the person meets it: the desktop dialog (real widgets,
offscreen, asked by a real Session through the real GuiPrompter), the real CLI on a pseudo-
terminal (tests/app/test_terminal.py's rig) and the Permissions window. The model is the
scripted OpenAI-protocol server; a typed command goes through the real direct action, sandbox
plan and all. Time is a ManualClock wherever the deadline matters.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QApplication, QLabel, QLineEdit, QTextEdit

from app.cli import ask_on_terminal
from app.permission_dialog import PermissionDialog, present_question
from app.permission_prompt import Choice, GuiPrompter
from app.qt_session import QtSession
from app.windows.permissions import PermissionsWindow
from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import Denial, RulePrompter
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock
from tests.app.gui.conftest import (  # noqa: F401 - the desktop's fixtures, used by name
    _collect_qt_garbage_on_the_ui_thread,
    app_home,
    config_home,
    event_loop_qt,
    make_session,
    open_settings,
    run,
    until,
)
from tests.app.gui.test_permission_dialog import click, open_dialogs
from tests.app.test_terminal import Terminal
from tests.support.cli import make_user
from tests.support.openai_server import ToolCalls
from tests.support.prompts import make_request
from tools.manual import CallPlan, Capability

FIND = "find . -name 'notes; see below' -delete"
RTL_NAME = "report\u202efdp.sh"  # reads as "reporths.pdf" where the override is honoured
RTL_SHOWN = "report\\u202efdp.sh"
HIDDEN = ("\u202e", "\u202d", "\u200b", "\x1b")


# --- rigs -------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_qt_garbage_left_for_other_threads() -> Iterator[None]:
    """Collect cyclic garbage on the UI thread before each test, and after it.

    A desktop test's qasync loop, QtSession and prompter stay referenced by pytest (the `run`
    fixture's closure) until after every teardown, so they become garbage only then. Collected
    later by whichever thread allocates (the next test's MCP server's AnyIO thread), a QObject
    with timers would be destroyed there, which Qt warns about."""
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()
    yield
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


def dialog_text(dialog: PermissionDialog) -> list[str]:
    """Every piece of text the dialog shows: its labels and its exact-text boxes, whole."""
    labels = [w.text() for w in dialog.findChildren(QLabel) if w.isVisible() and w.text()]
    boxes = [w.toPlainText() for w in dialog.findChildren(QTextEdit) if w.isVisible()]
    return labels + boxes


class Seen:
    """What a dialog showed, read while it was open (it is deleted once answered)."""

    def __init__(self, dialog: PermissionDialog) -> None:
        self.rows = {
            label: (w.toPlainText() if isinstance(w, QTextEdit) else w.text())
            for label, w in dialog.rows.items()
        }
        self.texts = dialog_text(dialog)
        self.choices = set(dialog.choice_buttons)
        self.no_always = dialog.no_always_note.text() if dialog.no_always_note else ""
        self.covers = dialog.covers_note.text() if dialog.covers_note else ""
        self.countdown = dialog.countdown_label.text()
        self.countdown_max = dialog.countdown_bar.maximum()


@pytest.fixture
def desktop(app_home: Path, scripted_server: Any, run: Any, qtbot: Any) -> Iterator[Any]:
    """`desktop(script, clock=None)`: a QtSession on a real Session asking through the real
    GuiPrompter and dialog; `.turn(text, answer)` runs a turn, answering the first dialog with
    `answer(dialog)` and returning (the turn, what the dialog showed)."""
    made: list[tuple[GuiPrompter, QtSession]] = []

    class Desktop:
        def __init__(self, script: list[Any], clock: ManualClock | None) -> None:
            self.prompter = GuiPrompter(
                present=functools.partial(present_question, activation_delay_s=0)
            )
            settings = Settings()
            settings.memory.extract = False
            session = make_session(app_home, prompter=self.prompter, settings=settings, clock=clock)
            if script:
                server = scripted_server(script)
                session.use_model(OpenAIChatModel(server.base_url, model="scripted"))
            self.assistant = QtSession(session)
            made.append((self.prompter, self.assistant))

        def turn(
            self, text: str, answer: Callable[[PermissionDialog], Any], chat: Any = None
        ) -> tuple[Any, Seen]:
            """The turn, typed into `chat` (a ChatWindow) when given, as a person would."""

            async def scenario() -> tuple[Any, Seen]:
                asking = chat.send(text) if chat is not None else self.assistant.ask(text)
                turn = asyncio.ensure_future(asking)
                await until(lambda: open_dialogs() or turn.done())
                (dialog,) = open_dialogs()
                await until(dialog.allow_button.isEnabled)
                if chat is not None:
                    # The chat's "waiting for your permission" follows the dialog a moment
                    # later (app.chat.ASKED_HINT_MS), so as not to delay it.
                    await until(chat.hint.text)
                seen = Seen(dialog)
                answer(dialog)
                return await turn, seen

            return run(scenario())

    yield lambda script=(), clock=None: Desktop(list(script), clock)
    for prompter, assistant in made:
        prompter.cancel_all()
        assistant.close()


def deny(qtbot: Any) -> Callable[[PermissionDialog], None]:
    return lambda dialog: click(qtbot, dialog.deny_button)


def allow(qtbot: Any, choice: Choice) -> Callable[[PermissionDialog], None]:
    def answer(dialog: PermissionDialog) -> None:
        click(qtbot, dialog.choice_buttons[choice])
        click(qtbot, dialog.allow_button)

    return answer


@pytest.fixture
def docs(app_home: Path) -> Path:
    folder = app_home.parent / "user" / "Documents"
    folder.mkdir()
    (folder / "notes; see below").write_text("keep me\n")
    (folder / "notes.txt").write_text("Buy milk\n")
    (folder / RTL_NAME).write_text("#!/bin/sh\n")
    return folder


@pytest.fixture
def user(tmp_path: Path) -> Path:
    folder = make_user(tmp_path / "cli-user")
    (folder / "Documents" / "notes; see below").write_text("keep me\n")
    (folder / "Documents" / RTL_NAME).write_text("#!/bin/sh\n")
    return folder


@pytest.fixture
def terminal() -> Iterator[Callable[..., Terminal]]:
    opened: list[Terminal] = []

    def start(user: Path, *args: str) -> Terminal:
        opened.append(Terminal(user, *args))
        return opened[-1]

    yield start
    for term in opened:
        term.close()


def prompt_of(term: Terminal) -> str:
    """The permission prompt the terminal showed, answered no; the prompt's text."""
    shown = term.read_until("Allow?")
    term.type("n\n")
    term.finish()
    return shown.replace("\r\n", "\n")


# --- a `;` inside a word stays inside it --------------------------------------------------------


def test_a_find_whose_pattern_holds_a_semicolon_is_shown_as_exactly_its_words_in_the_dialog(
    qtbot, desktop, docs
):
    app = desktop()
    turn, seen = app.turn(f"run `{FIND}` in {docs}", deny(qtbot))
    command = seen.rows["Command"]
    assert command.endswith("find . -name 'notes; see below' -delete")
    assert "Effects" not in seen.rows
    # Nothing of the pattern was moved into a row or bullet of its own.
    assert not [t for t in seen.texts if t.lower().lstrip("• ").startswith("see below")]
    assert not [t for t in seen.texts if t.startswith("•")]
    assert seen.rows["Folder"] == str(docs)
    assert seen.rows["Can change"] == str(docs)
    assert (docs / "notes; see below").exists()  # denied: nothing ran
    assert turn.tool_calls[0].status == "denied"


def test_the_terminal_shows_the_same_find_as_exactly_its_words(user, terminal):
    term = terminal(user, "ask", f"run `{FIND}` in ~/Documents", "--llm", "none")
    shown = prompt_of(term)
    (line,) = [line for line in shown.splitlines() if line.strip().startswith("Command:")]
    assert line.endswith("find . -name 'notes; see below' -delete")
    assert (user / "Documents" / "notes; see below").exists()


def test_an_argument_that_reads_like_effects_prints_no_fake_bullets(qtbot, desktop, docs):
    sneaky = "build; changes nothing; no network"
    app = desktop()
    _, seen = app.turn(f"run `touch '{sneaky}'` in {docs}", deny(qtbot))
    assert seen.rows["Command"].endswith(f"touch '{sneaky}'")
    # What it can change is the plan's, not the argument's words.
    assert seen.rows["Can change"] == str(docs)
    lowered = [t.lower() for t in seen.texts]
    assert "changes nothing" not in lowered
    assert "no network" not in lowered
    assert not [t for t in seen.texts if t.startswith("•")]


# --- MCP arguments in full, the target first ------------------------------------------------


CONTENT = "A" * 4000 + " the end of the content"


def _mcp_request(plan: CallPlan | None) -> Any:
    arguments = {"content": CONTENT, "path": "/home/ann/.bashrc"}
    return make_request(
        capability=Capability.MCP_WRITE,
        scope="mcp:home__write_file",
        tool="home__write_file",
        arguments=arguments,
        plan=plan,
        risk="moderate",
        reversibility="effort",
    )


MCP_PLAN = CallPlan(
    mcp_server="home",
    mcp_tool="write_file",
    mcp_arguments=(("content", json.dumps(CONTENT)), ("path", json.dumps("/home/ann/.bashrc"))),
)


@pytest.mark.parametrize("plan", [MCP_PLAN, None], ids=["with its plan", "without a plan"])
def test_an_mcp_call_shows_every_argument_in_full_with_the_path_before_a_long_content(qtbot, plan):
    from app.permission_prompt import QuestionView
    from broker.permissions import PermissionQuestion
    from core.clock import SystemClock

    request = _mcp_request(plan)
    question = QuestionView(PermissionQuestion(request, SystemClock()))
    dialog = PermissionDialog(question, activation_delay_s=0)
    qtbot.addWidget(dialog)
    dialog.show()
    arguments = dialog.rows["Arguments"].toPlainText().splitlines()
    assert arguments[0] == 'path = "/home/ann/.bashrc"'
    assert arguments[1] == f"content = {json.dumps(CONTENT)}"  # whole, not cut at 300
    if plan is not None:
        assert dialog.rows["Server"].toPlainText() == "home"
        assert dialog.rows["Tool"].toPlainText() == "write_file"
    # The long value scrolls inside its box; the box does not push the buttons off screen.
    box = dialog.rows["Arguments"]
    assert box.height() < box.full_height(box.width())
    assert dialog.allow_button.isVisible()
    question.cancel("cancelled")

    shown = io_prompt(request)
    assert shown.index("/home/ann/.bashrc") < shown.index("AAAA")
    assert CONTENT in shown


def io_prompt(request: Any) -> str:
    import io

    err = io.StringIO()
    ask_on_terminal(request, io.StringIO("n\n"), err)
    return err.getvalue()


# --- bidi, control and zero-width characters are shown escaped everywhere ------------------


def test_a_right_to_left_override_in_a_file_name_is_shown_escaped_in_the_dialog_and_permissions(
    qtbot, run, desktop, docs
):
    from app.chat import ChatWindow

    app = desktop([ToolCalls([("file_read", {"path": f"{docs}/{RTL_NAME}"})]), "A script."])
    chat = ChatWindow(app.assistant, lambda: None)
    qtbot.addWidget(chat)
    hints: list[str] = []

    def answer(dialog: PermissionDialog) -> None:
        hints.append(chat.hint.text())  # what the chat says while the dialog is open
        allow(qtbot, Choice.SESSION)(dialog)

    # The person names no folder: the model asks for the odd file itself.
    _, seen = app.turn("read the script I downloaded", answer, chat)
    assert seen.rows["File"] == f"{docs}/{RTL_SHOWN}"
    assert not [t for t in seen.texts if any(ch in t for ch in HIDDEN)]
    assert hints == [f"Waiting for your permission: Read a file ({docs}/{RTL_SHOWN})…"]

    window = PermissionsWindow(app.assistant)
    qtbot.addWidget(window)
    window.show()
    run(window.refresh())
    model = window.live_model
    assert model.rowCount() == 1
    where = str(model.index(0, 1).data())
    tip = str(model.index(0, 1).data(Qt.ItemDataRole.ToolTipRole))
    assert where == f"{docs}/{RTL_SHOWN}"
    assert f"{docs}/{RTL_SHOWN}" in tip
    assert not [t for t in (where, tip) if any(ch in t for ch in HIDDEN)]


def test_a_session_grant_on_the_right_to_left_file_itself_is_listed_escaped_in_both_windows(
    qtbot, run, app_home
):
    """The grant's scope is the odd file itself (the model named it, the person did not)."""
    folder = app_home.parent / "user" / "Odd"
    folder.mkdir()
    (folder / RTL_NAME).write_text("#!/bin/sh\n")

    class Person(RulePrompter):
        def decide(self, request: Any) -> Any:
            from broker.permissions import PromptDecision

            return PromptDecision(allow=True, mode=GrantMode.SESSION)

    session = make_session(app_home, prompter=Person())
    assistant = QtSession(session)
    try:
        outcome = session.permissions.authorize(
            tool="file_read",
            capability=Capability.FILE_READ,
            arguments={"path": str(folder / RTL_NAME)},
            targets=[str(folder / RTL_NAME)],
            call_id="c1",
            user_scopes=[],
        )
        assert not isinstance(outcome, Denial), outcome
        window = PermissionsWindow(assistant)
        qtbot.addWidget(window)
        window.show()
        run(window.refresh())
        where = str(window.live_model.index(0, 1).data())
        tip = str(window.live_model.index(0, 1).data(Qt.ItemDataRole.ToolTipRole))
        assert where == f"{folder}/{RTL_SHOWN}"
        assert f"{folder}/{RTL_SHOWN}" in tip
        assert "\u202e" not in where + tip

        # The Activity window lists the same grant from the audit, escaped too.
        from app.windows.activity import ActivityWindow

        activity = ActivityWindow(assistant)
        qtbot.addWidget(activity)
        activity.show()
        run(activity.refresh())
        model = activity.model
        cells = [
            str(model.index(row, column).data(role))
            for row in range(model.rowCount())
            for column in range(model.columnCount())
            for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole)
        ]
        assert any(RTL_SHOWN in cell for cell in cells)
        assert not [c for c in cells if any(ch in c for ch in HIDDEN)]
    finally:
        assistant.close()


def test_the_terminal_shows_the_right_to_left_file_name_escaped(user, terminal, scripted_server):
    docs = user / "Documents"
    server = scripted_server(
        [ToolCalls([("file_read", {"path": f"{docs}/{RTL_NAME}"})]), "A script."]
    )
    term = terminal(
        user, "ask", "summarise the script in ~/Documents", "--llm", server.base_url, "--no-refine"
    )
    shown = prompt_of(term)
    assert f"File: {docs}/{RTL_SHOWN}" in shown
    assert "\u202e" not in shown


# --- one file is named, not its folder ------------------------------------------------------


def test_a_read_of_one_file_names_that_file_and_says_what_a_longer_answer_covers(
    qtbot, desktop, docs
):
    app = desktop([ToolCalls([("file_read", {"path": f"{docs}/notes.txt"})]), "Buy milk."])
    _, seen = app.turn(f"summarise my notes in {docs}", deny(qtbot))
    assert seen.rows["File"] == f"{docs}/notes.txt"
    assert str(docs) not in seen.rows.values()  # no row names only the folder
    assert seen.covers == f"Any answer but once also covers everything in {docs}."


def test_the_terminal_names_the_one_file_too(user, terminal, scripted_server):
    docs = user / "Documents"
    server = scripted_server([ToolCalls([("file_read", {"path": f"{docs}/plan.txt"})]), "Ok."])
    term = terminal(
        user, "ask", "summarise my plan in ~/Documents", "--llm", server.base_url, "--no-refine"
    )
    shown = prompt_of(term)
    assert f"File: {docs}/plan.txt" in shown
    assert f"also covers everything in {docs}." in shown


# --- Always is offered only where it will be saved ------------------------------------------


def test_always_is_not_offered_for_a_secret_looking_path_and_the_dialog_says_why(
    qtbot, desktop, docs
):
    notes = docs / "notes"
    notes.mkdir()
    secret = notes / "Password ideas.md"
    secret.write_text("ideas\n")
    app = desktop([ToolCalls([("file_read", {"path": str(secret)})]), "Some ideas."])
    _, seen = app.turn(f"read {secret}", allow(qtbot, Choice.SESSION))
    assert Choice.ALWAYS not in seen.choices
    assert "“Always” is not offered" in seen.no_always
    assert "looks like it holds a password" in seen.no_always
    assert not [t for t in seen.texts if "Saved until you remove it" in t]
    grants = app.assistant.session.permissions.grants.live()
    assert [g.mode for g in grants] == [GrantMode.SESSION]
    saved = app.assistant.session.home / "grants.json"
    assert not saved.exists() or "Password" not in saved.read_text()


def test_the_terminal_does_not_offer_always_for_a_secret_looking_path(
    user, terminal, scripted_server
):
    secret = user / "Documents" / "Password ideas.md"
    secret.write_text("ideas\n")
    server = scripted_server([ToolCalls([("file_read", {"path": str(secret)})]), "Ok."])
    term = terminal(user, "ask", f"read {secret}", "--llm", server.base_url, "--no-refine")
    shown = prompt_of(term)
    assert "[a]lways" not in shown
    assert "“Always” is not offered" in shown


# --- one prompt, one clock ------------------------------------------------------------------


def _type(qtbot: Any, edit: QLineEdit, text: str) -> None:
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Delete)
    qtbot.keyClicks(edit, text)


def test_a_timeout_changed_in_settings_is_the_dialogs_countdown_the_brokers_deadline_and_the_audit(
    qtbot, run, app_home, config_home, docs
):
    """Settings changes the timeout from 60 s to 20 s; the next question counts down from 20,
    the broker denies at 20 on the same clock, the dialog closes then, and the audit says 20."""
    clock = ManualClock()
    prompter = GuiPrompter(present=functools.partial(present_question, activation_delay_s=0))
    assistant = QtSession(make_session(app_home, prompter=prompter, clock=clock))
    try:
        settings_window = open_settings(qtbot, assistant)
        _type(qtbot, settings_window.numbers["permissions.prompt_timeout_s"], "20")
        assert run(settings_window.save()) is True

        async def scenario() -> tuple[Any, Seen, bool]:
            turn = asyncio.ensure_future(assistant.ask(f"list files in {docs}"))
            await until(lambda: open_dialogs() or turn.done())
            (dialog,) = open_dialogs()
            seen = Seen(dialog)
            clock.advance(19.5)
            await asyncio.sleep(0.5)  # the broker and the dialog both look at the clock
            open_before = bool(open_dialogs()) and not turn.done()
            clock.advance(0.5)
            result = await turn
            await until(lambda: not open_dialogs())
            return result, seen, open_before

        result, seen, open_before = run(scenario())
    finally:
        prompter.cancel_all()
        assistant.close()
    assert "Denies automatically in 20 s" in seen.countdown
    assert seen.countdown_max == 200  # tenths of the 20 s
    assert open_before  # neither ended early on a clock of its own
    (call,) = result.tool_calls
    assert call.status == "timeout"
    assert "within 20 s" in call.reason
    lines = [json.loads(line) for line in (app_home / "audit.jsonl").read_text().splitlines()]
    asked = [x for x in lines if x["event"] == "PERMISSION_CHECK" and x["data"]["outcome"] == "ask"]
    timed_out = [x for x in lines if x["event"] == "PERMISSION_TIMEOUT"]
    assert [x["data"]["timeout_s"] for x in asked] == [20.0]
    assert [x["data"]["timeout_s"] for x in timed_out] == [20.0]


# --- a real MCP server's call, content before the target ------------------------------------


def _notes_settings(folder: Path) -> Settings:
    from broker.settings import McpSettings
    from tests.support.mcp_notes import notes_config, write_notes

    write_notes(folder)
    settings = Settings()
    settings.router.model_refinement = False
    settings.memory.extract = False
    settings.mcp = McpSettings(servers={"notes": notes_config(folder, timeout_s=10)})
    return settings


def test_a_real_mcp_write_shows_the_note_name_first_and_the_whole_text_on_the_terminal(
    tmp_path, scripted_server
):
    """The model sends `text` (4000 characters) before `name`; the CLI's prompt (FlagPrompter on
    a terminal) lists the server, the tool, `name` first and `text` whole."""
    import io

    from app.cli import FlagPrompter
    from broker.session import Session

    settings = _notes_settings(tmp_path / "notes")
    server = scripted_server(
        [ToolCalls([("notes__write_note", {"text": CONTENT, "name": "todo.txt"})]), "Done."]
    )
    shown = io.StringIO()
    prompter = FlagPrompter([], None, (io.StringIO("n\n"), shown))
    model = OpenAIChatModel(server.base_url, model="scripted-model", timeout_s=10)
    session = Session(home=tmp_path / "home", settings=settings, model=model, prompter=prompter)
    try:
        turn = session.ask("write a note called todo.txt in my notes")
    finally:
        session.close()
    text = shown.getvalue()
    assert "  Server: notes\n" in text
    assert "  Tool: write_note\n" in text
    name_at = text.index('name = "todo.txt"')
    text_at = text.index(f"text = {json.dumps(CONTENT)}")  # whole, not cut at 300
    assert name_at < text_at
    assert [c.status for c in turn.tool_calls] == ["denied"]
    assert not (tmp_path / "notes" / "todo.txt").exists()
