"""One whole turn as a person drives it: typed in the chat window, asked in the permission
dialog, answered "Allow for 5 min", answered by the model.

Real parts throughout: the chat window, the GuiPrompter and its dialog, the QtSession and a
Session on a real home and files, the real OpenAI client against the scripted OpenAI server on
127.0.0.1 (the model asks for `file_list`, then answers from its result), offscreen Qt on a
qasync loop. Only the person is played: keys into the input, a click on the dialog's button.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.chat import ChatWindow
from app.chat_view import ReplyBubble, ToolCard
from app.permission_dialog import PermissionDialog
from app.permission_prompt import Choice, GuiPrompter
from app.qt_session import QtSession
from broker.llm.openai_client import OpenAIChatModel
from broker.types import GrantMode
from tests.app.gui.conftest import make_session, until
from tests.support.openai_server import Text, ToolCalls


def test_a_turn_from_the_chat_window_through_the_dialog_to_the_reply(
    qtbot, run, app_home, scripted_server
):
    docs = app_home.parent / "user" / "Documents"
    docs.mkdir()
    for name in ("plan.txt", "budget.csv"):
        (docs / name).write_text("x\n")
    server = scripted_server(
        [
            ToolCalls([("file_list", {"path": str(docs)})]),
            Text("You have two files: plan.txt and budget.csv."),
        ]
    )
    prompter = GuiPrompter()
    session = make_session(app_home, prompter=prompter)
    session.settings.memory.extract = False
    session.use_model(OpenAIChatModel(server.base_url, model="scripted"))
    assistant = QtSession(session)
    chat = ChatWindow(assistant, lambda: None)
    qtbot.addWidget(chat)
    chat.show()

    async def person() -> PermissionDialog:
        qtbot.keyClicks(chat.input, "look through ~/Documents and tell me what is there")
        qtbot.keyClick(chat.input, Qt.Key.Key_Return)

        def dialog() -> PermissionDialog | None:
            for widget in QApplication.topLevelWidgets():
                if isinstance(widget, PermissionDialog) and widget.isVisible():
                    return widget
            return None

        await until(lambda: dialog() is not None and dialog().armed)  # type: ignore[union-attr]
        shown = dialog()
        assert shown is not None
        shown.select(Choice.TIMED)
        shown.duration_box.setCurrentIndex(shown.duration_box.findData(5))
        qtbot.mouseClick(shown.allow_button, Qt.MouseButton.LeftButton)
        await until(lambda: not assistant.busy and chat.stop_button.isEnabled() is False)
        return shown

    run(person())

    [card] = [w for w in chat.transcript.widgets() if isinstance(w, ToolCard)]
    [reply] = [w for w in chat.transcript.widgets() if isinstance(w, ReplyBubble)]
    assert "OK" in card.status.text()
    assert reply.view.toPlainText() == "You have two files: plan.txt and budget.csv."
    [grant] = session.permissions.grants.live()
    assert (grant.mode, grant.capability.value) == (GrantMode.TIMED, "file_read")
    assert grant.expires_at is not None
    assert round(grant.expires_at - grant.issued_at) == 300
    # The model was given the listing the tool made, in the turn the person allowed.
    assert "budget.csv" in str(server.requests[-1]["messages"][-1]["content"])
    assistant.close()
