"""The first-run window (app/windows/welcome.py) as DesktopApp shows it.

Real parts: the real DesktopApp on a real home (memory, audit and the `welcomed` flag are real
files), the model found by the app's own connect_model (the scripted OpenAI server on
127.0.0.1, probed on the port Chamberlain looks at; or the embedded model when none answers),
real widgets offscreen on a qasync loop, keys and clicks sent to them. Whoever answers
permission questions is a scripted prompter (the dialog has its own tests).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QPushButton

from app.main import DesktopApp
from app.windows.welcome import LOOKING, WELCOMED, WelcomeWindow
from broker.llm import endpoints
from broker.llm.embedded import MODEL_NAME, embedded_problem
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.types import GrantMode
from tests.app.gui.conftest import until
from tests.support.openai_server import free_port

REPO = Path(__file__).resolve().parents[3]

# The offscreen platform has no tray window to follow, and says so when the tray icon shows.
pytestmark = pytest.mark.qt_log_ignore("systemTrayWindowChanged")


class AllowOnce(RulePrompter):
    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


@pytest.fixture
def apps(qapp: Any, app_home: Path, event_loop_qt: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Start DesktopApps on the test's home, as many as a test needs (one start each); every
    one is quit at the end. No keyring: memory is kept unencrypted, so no passphrase dialog."""
    monkeypatch.setenv("CHAMBERLAIN_MEMORY__ENCRYPTION", "off")
    made: list[DesktopApp] = []

    def start(**options: Any) -> DesktopApp:
        options.setdefault("connect_model", False)
        options.setdefault("use_tray", True)
        app = DesktopApp(app_home, prompter=AllowOnce(), **options)
        made.append(app)
        app.start()
        return app

    yield start
    for app in made:
        app.quit()


def shown_welcome() -> WelcomeWindow | None:
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, WelcomeWindow) and widget.isVisible():
            return widget
    return None


async def started(app: DesktopApp) -> WelcomeWindow:
    """Load the app as at start; the welcome it shows, once it says what was found."""
    await app.load()
    await until(lambda: shown_welcome() is not None)
    welcome = shown_welcome()
    assert welcome is not None
    await until(lambda: welcome.model_line.text() != LOOKING)
    return welcome


def test_the_welcome_opens_on_the_first_start_and_not_on_the_next_once_esc_closed_it(
    apps, run, app_home, qtbot
):
    first = apps()
    welcome = run(started(first))
    assert welcome.windowTitle() == "Welcome"
    assert not (app_home / WELCOMED).exists()

    qtbot.keyClick(welcome, Qt.Key.Key_Escape)
    assert not welcome.isVisible()
    run(until(lambda: (app_home / WELCOMED).exists()))
    first.quit()

    second = apps()

    async def load_and_settle() -> None:
        await second.load()
        await asyncio.sleep(0.3)  # a window asked for at start is shown by now

    run(load_and_settle())
    assert shown_welcome() is None

    async def from_the_tray() -> None:
        # It is still there for whoever wants it: the tray menu's Welcome… opens it.
        second.tray.actions["welcome"].trigger()
        await until(lambda: "Opening" not in second.windows["welcome"].memory_line.text())

    assert second.tray.actions["welcome"].text() == "&Welcome…"
    run(from_the_tray())
    assert shown_welcome() is not None


def test_quitting_with_the_welcome_open_is_not_closing_it_so_it_opens_again(apps, run, app_home):
    first = apps()
    run(started(first))
    first.quit()
    assert not (app_home / WELCOMED).exists()
    run(started(apps()))


def test_the_model_line_names_the_local_server_that_answers_on_its_usual_port(
    apps, run, scripted_server, monkeypatch
):
    server = scripted_server(model="llama3.2:3b")
    monkeypatch.setattr(endpoints, "PROBE_PORTS", [("Ollama", server.port)])
    welcome = run(started(apps(connect_model=True)))
    said = welcome.model_line.text()
    assert said.startswith("llama3.2:3b answers, from Ollama on this computer")
    assert f"127.0.0.1:{server.port}" in said
    assert "embedded" not in said


@pytest.mark.skipif(
    embedded_problem() is not None, reason=f"embedded model not installed: {embedded_problem()}"
)
def test_with_no_server_the_model_line_names_the_embedded_model_and_how_to_get_a_better_one(
    apps, run, monkeypatch
):
    monkeypatch.setenv("CHAMBERLAIN_LLM__EMBEDDED_FALLBACK", "true")
    monkeypatch.setattr(endpoints, "PROBE_PORTS", [("Ollama", free_port())])
    app = apps(connect_model=True)
    welcome = run(started(app))
    said = welcome.model_line.text()
    assert said.startswith(f"The embedded model, {MODEL_NAME}, answers")
    assert "start Ollama or LM Studio" in said
    assert "Settings → Model" in said
    welcome.model_settings.click()
    assert app.windows["settings"].isVisible()


def test_with_no_model_at_all_the_line_says_why_and_that_the_examples_still_work(
    apps, run, monkeypatch
):
    monkeypatch.setenv("CHAMBERLAIN_LLM__URL", "none")
    welcome = run(started(apps(connect_model=True)))
    said = welcome.model_line.text()
    assert said.startswith("No model answers yet. No model is configured")
    assert "The examples below work without one." in said


def test_the_memory_line_says_how_memory_is_kept(apps, run):
    welcome = run(started(apps()))
    run(until(lambda: "Opening" not in welcome.memory_line.text()))
    assert welcome.memory_line.text() == (
        "What Chamberlain remembers is not encrypted: you chose to keep it unencrypted."
    )


def test_an_example_button_puts_its_request_in_the_chat_and_a_draft_comes_back_with_undo(
    apps, run, qtbot
):
    from app.chat import ChatWindow

    app = apps()
    welcome = run(started(app))
    chat = app.window("chat")
    assert isinstance(chat, ChatWindow)
    chat.input.setPlainText("a half-written draft")

    async def click() -> None:
        qtbot.mouseClick(welcome.example_buttons[1], Qt.MouseButton.LeftButton)
        await until(lambda: chat.isVisible() and chat.input.toPlainText() != "a half-written draft")

    run(click())
    assert chat.input.toPlainText() == "how much disk space is free?"
    assert not app.assistant.busy  # put there to be sent by the person, not sent
    chat.input.undo()
    assert chat.input.toPlainText() == "a half-written draft"


def test_enter_on_a_focused_example_puts_it_in_the_chat(apps, run, qtbot, app_home):
    (app_home.parent / "user" / "Documents").mkdir()
    from app.chat import ChatWindow

    app = apps()
    welcome = run(started(app))
    button = welcome.example_buttons[0]
    assert button.hasFocus() or welcome.focusWidget() is button  # focused when it opens

    async def enter() -> None:
        qtbot.keyClick(button, Qt.Key.Key_Return)
        await until(lambda: "chat" in app.windows and app.windows["chat"].isVisible())

    run(enter())
    chat = app.windows["chat"]
    assert isinstance(chat, ChatWindow)
    assert chat.input.toPlainText() == "list files in ~/Documents"


def test_without_a_documents_folder_the_first_example_lists_the_home_folder(apps, run, app_home):
    welcome = run(started(apps()))
    assert not (app_home.parent / "user" / "Documents").exists()
    assert [b.property("request") for b in welcome.example_buttons] == [
        "list files in my home folder",
        "how much disk space is free?",
        "remember that I prefer short answers",
    ]


def test_every_example_is_done_without_a_model(apps, run, app_home):
    """What the welcome promises: the examples work with any model, even none."""
    documents = app_home.parent / "user" / "Documents"
    documents.mkdir()
    (documents / "holiday plan.md").write_text("Lisbon\n")
    app = apps()
    welcome = run(started(app))
    assert app.assistant.session.model is None
    requests = [str(b.property("request")) for b in welcome.example_buttons]
    turns = [run(app.assistant.ask(request), timeout=60) for request in requests]
    assert [turn.status for turn in turns] == ["done", "done", "done"]
    assert "holiday plan.md" in turns[0].reply
    assert "free of" in turns[1].reply
    store = app.assistant.session.memory
    assert store is not None
    assert [fact.text for fact in store.facts()] == ["I prefer short answers"]


def test_tab_follows_the_screen_and_no_two_buttons_share_a_mnemonic(apps, run, qtbot):
    welcome = run(started(apps()))
    welcome.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is welcome)
    buttons = [b for b in welcome.findChildren(QPushButton) if b.isVisible()]
    welcome.model_settings.setFocus()
    visited = [QApplication.focusWidget()]
    for _ in buttons[1:]:
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        visited.append(QApplication.focusWidget())

    def place(button: QPushButton) -> tuple[int, int]:
        at = button.mapTo(welcome, button.rect().topLeft())
        return (at.y() // 20, at.x())  # rows first (a row's buttons differ by a few pixels)

    assert visited == sorted(buttons, key=place)
    letters = [b.text()[b.text().index("&") + 1].lower() for b in buttons if "&" in b.text()]
    assert len(letters) == len(buttons)
    assert len(set(letters)) == len(letters)
    names = [b.accessibleName() for b in buttons]
    assert all(names)
    assert len(set(names)) == len(names)


FITS = """
import asyncio, json, os, sys
from pathlib import Path
import qasync
from PySide6.QtWidgets import QApplication
from app.main import DesktopApp
from app.windows.welcome import LOOKING

app = QApplication(["chamberlain"])
loop = qasync.QEventLoop(app)
asyncio.set_event_loop(loop)

async def main():
    shell = DesktopApp(Path(os.environ["CHAMBERLAIN_HOME"]), use_tray=True)
    shell.start()
    await shell.load()
    welcome = shell.windows["welcome"]
    while welcome.model_line.text() == LOOKING or "Opening" in welcome.memory_line.text():
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    frame, ratio = welcome.frameGeometry(), welcome.devicePixelRatioF()
    print(json.dumps({"width": frame.width() * ratio, "height": frame.height() * ratio,
                      "model": welcome.model_line.text()}))
    shell.quit()

with loop:
    loop.run_until_complete(main())
"""


@pytest.fixture
def scaled_env(tmp_path: Path) -> dict[str, str]:
    user, home = tmp_path / "user", tmp_path / "home"
    user.mkdir()
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(user),
        "CHAMBERLAIN_HOME": str(home),
        # The longest model line: none, with why and how to get one.
        "CHAMBERLAIN_LLM__URL": "none",
        "CHAMBERLAIN_MEMORY__ENCRYPTION": "off",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "QT_QPA_PLATFORM": "offscreen",
        "QT_SCALE_FACTOR": "1.5",
        "PYTHONPATH": str(REPO),
    }


def test_at_one_and_a_half_times_scale_the_welcome_fits_a_1280_by_800_screen(scaled_env):
    """A separate process: QT_SCALE_FACTOR is read when Qt starts."""
    done = subprocess.run(
        [sys.executable, "-c", FITS],
        env=scaled_env,
        cwd=scaled_env["HOME"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    size = json.loads(done.stdout.strip().splitlines()[-1])
    assert size["model"].startswith("No model answers yet.")
    # Room for a panel (about 40 px) and the window's title bar (about 30 px).
    assert size["width"] <= 1280
    assert size["height"] <= 800 - 70


def test_without_a_tray_the_welcome_opens_over_the_chat_and_does_not_point_at_a_tray(apps, run):
    app = apps(use_tray=False)
    welcome = run(started(app))
    assert app.windows["chat"].isVisible()
    assert "tray" not in welcome.again.text()
    assert "Settings → Model" in welcome.again.text()
