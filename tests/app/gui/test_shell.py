"""The running app (DesktopApp): the tray's Revoke all mid-turn, notifications, windows on demand.

Real parts: a real Session on a real home and files, the real OpenAI client against the
scripted OpenAI server on 127.0.0.1, real Qt offscreen on a qasync loop. The person answering
permission prompts is a scripted prompter (the dialog has its own tests).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.main import DesktopApp
from broker.events import ToolFinished
from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.types import GrantMode
from tests.support.openai_server import Stall, Text, ToolCalls


class AllowFiveMinutes(RulePrompter):
    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=True, mode=GrantMode.TIMED, duration_s=300)


@pytest.fixture
def docs(app_home: Path) -> Path:
    folder = app_home.parent / "user" / "Documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    return folder


@pytest.fixture
def shell(qapp, app_home, event_loop_qt, monkeypatch):
    monkeypatch.setenv("CHAMBERLAIN_MEMORY__ENCRYPTION", "off")
    made = DesktopApp(app_home, prompter=AllowFiveMinutes(), use_tray=True, connect_model=False)
    yield made
    made.quit()


def test_revoke_all_from_the_tray_mid_turn_makes_the_next_call_ask_again(
    shell, run, docs, scripted_server
):
    listing = ToolCalls([("file_list", {"path": str(docs)})])
    server = scripted_server([listing, Stall(1.5, listing), Text("Two looks, one file.")])
    prompter = shell.prompter

    async def turn() -> object:
        await shell.load()
        session = shell.assistant.session
        session.use_model(OpenAIChatModel(server.base_url, model="scripted"))

        revoked: list[str] = []

        def revoke_after_the_first_call(event: object) -> None:
            if isinstance(event, ToolFinished) and not revoked:
                revoked.append(event.call_id)
                shell.tray.actions["revoke"].trigger()

        shell.assistant.turn_event.connect(revoke_after_the_first_call)
        result = await shell.assistant.ask("look through ~/Documents and tell me what is there")
        return result

    result = run(turn())
    assert [c.status for c in result.tool_calls] == ["ok", "ok"]
    assert len(prompter.asked) == 2  # the 5-minute grant was revoked between the two calls
    revoked = [
        line for line in (shell.home / "audit.jsonl").read_text().splitlines()
        if "PERMISSION_REVOKED" in line and "revoked from the app" in line
    ]  # fmt: skip
    assert len(revoked) == 1


def test_windows_open_from_the_tray_once_the_session_is_up(shell, run):
    run(shell.load())
    shell.tray.actions["permissions"].trigger()
    assert shell.windows["permissions"].isVisible()
    shell.tray.actions["activity"].trigger()
    assert shell.windows["activity"].isVisible()


def test_the_trays_chat_brings_a_minimised_chat_back_as_it_was(shell, run):
    """Minimised (and maximised before that): Open chat restores it, still maximised, on top.
    The window manager's part is tried on a real X server in test_single_instance.py."""
    run(shell.load())
    shell.tray.actions["chat"].trigger()
    chat = shell.windows["chat"]
    chat.showMaximized()
    chat.showMinimized()
    assert chat.isMinimized()
    shell.tray.actions["chat"].trigger()
    assert chat.isVisible()
    assert not chat.isMinimized()
    assert chat.isMaximized()


def test_a_window_asked_for_before_the_session_is_up_opens_when_it_is(shell, run):
    assert shell.show_window("settings") is None

    async def later() -> None:
        await shell.load()
        await asyncio.sleep(0.05)

    run(later())
    assert shell.windows["settings"].isVisible()


def test_quit_from_the_tray_ends_the_app(shell, run):
    run(shell.load())
    shell.tray.actions["quit"].trigger()
    assert shell.finished.done()
    assert shell.finished.result() == 0


def test_a_memory_waiting_for_consent_is_announced_and_a_click_opens_memory_on_it(shell, run):
    """A real turn remembers a fact that waits for consent, in the real memory file; the
    notification says what waits and how to act in the app (no command), and clicking it
    (the tray icon's real messageClicked signal) opens Memory on that fact, selected."""
    from app.windows.memory import MemoryWindow
    from memory.types import FactStatus
    from tests.app.gui.conftest import until

    shown: list[tuple[str, str]] = []
    notify = shell.tray.notify

    def record(title: str, text: str, clicked=None) -> None:  # type: ignore[no-untyped-def]
        shown.append((title, text))
        notify(title, text, clicked)

    shell.tray.notify = record  # type: ignore[method-assign]

    async def scenario() -> MemoryWindow:
        await shell.load()
        await shell.assistant.ask("remember that I take insulin every morning")
        shell.tray.icon.messageClicked.emit()  # the person clicks the notification
        await until(lambda: "memory" in shell.windows and shell.windows["memory"].isVisible())
        window = shell.windows["memory"]
        assert isinstance(window, MemoryWindow)
        await until(lambda: bool(window.pending_view.selectionModel().selectedRows()))
        return window

    window = run(scenario())
    store = shell.assistant.session.memory
    assert store is not None
    [waiting] = store.facts(status=FactStatus.PENDING)
    [(title, text)] = shown
    assert title == "A memory waits for your approval"
    assert "“I take insulin every morning”" in text
    assert "Click here to approve, edit or reject it in Memory" in text
    assert "chamberlain memory" not in text
    assert waiting.id not in text
    assert window.tabs.currentIndex() == 1  # "Waiting for approval", not the empty Facts tab
    assert window._selected(window.pending_view) == waiting
    assert window.facts_model.facts == []


def test_a_long_turn_finishing_while_the_chat_is_hidden_is_announced(shell, run, monkeypatch):
    from broker.events import TurnEnded, TurnStarted
    from broker.types import PolicyDecision, RouterOutput, TurnResult

    run(shell.load())
    shown: list[tuple[str, str]] = []
    shell.tray.notify = lambda title, text, clicked=None: shown.append((title, text))  # type: ignore[method-assign]
    clock = iter([100.0, 100.0 + 30.0, 200.0, 201.0])
    monkeypatch.setattr("app.main.time.monotonic", lambda: next(clock))
    result = TurnResult(
        router=RouterOutput(),
        policy=PolicyDecision(
            intent="chat_only", allowed_tools=[], forbidden_tools=[], required_capabilities=[]
        ),
        reply="Here is the summary you asked for.\nMore lines.",
    )
    shell.assistant.turn_event.emit(TurnStarted("t-1", "summarise"))
    shell.assistant.turn_event.emit(TurnEnded("t-1", "done", result))
    assert shown == [("Chamberlain finished your request", "Here is the summary you asked for.")]
    # A quick turn, or one the person is watching, is not announced.
    shell.assistant.turn_event.emit(TurnStarted("t-2", "hi"))
    shell.assistant.turn_event.emit(TurnEnded("t-2", "done", result))
    assert len(shown) == 1


def test_about_from_the_tray_shows_the_version_and_where_the_data_lives(shell, run, app_home):
    import tomllib

    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QLabel

    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    expected = tomllib.loads(pyproject.read_text())["project"]["version"]

    async def about() -> object:
        await shell.load()
        shell.tray.actions["about"].trigger()
        await asyncio.sleep(0.05)
        return shell.windows.get("about")

    window = run(about())
    assert window is not None
    assert window.isVisible()
    assert shell.tray.actions["about"].text() == "A&bout Chamberlain"
    assert window.windowTitle() == "About"  # Qt adds the app's name, once
    title = window.findChild(QLabel, "about-title")
    assert f"Chamberlain {expected}" in title.text()
    facts = window.findChild(QLabel, "about-details").text()
    assert f"Data folder: {app_home}" in facts
    window.copy.click()
    assert QGuiApplication.clipboard().text() == f"Chamberlain {expected}\n{facts}"


def test_a_model_address_from_the_environment_that_is_not_one_starts_the_app_without_a_model(
    qapp, app_home, event_loop_qt, monkeypatch, run
):
    # A variable (or a hand-edited file) the Settings window never checked: the app must still
    # start, say what is wrong in its own words, and leave the fix to Settings.
    monkeypatch.setenv("CHAMBERLAIN_MEMORY__ENCRYPTION", "off")
    monkeypatch.setenv("CHAMBERLAIN_LLM__URL", "htp:/localhost 18731")
    app = DesktopApp(app_home, prompter=AllowFiveMinutes(), use_tray=True, connect_model=True)
    try:
        run(app.load())  # connects the model as the app does at start
        session = app.assistant.session
        assert session.model is None
        assert session.model_problem is not None
        assert "htp:/localhost 18731" in session.model_problem
        assert "--llm" not in session.model_problem
    finally:
        app.quit()
