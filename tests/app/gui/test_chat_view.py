"""The chat transcript as a person reads it: code blocks (every character reachable, Copy),
long pastes (first lines, then all on request), a readable measure, and a long title.

Real parts: the real chat window and transcript offscreen, with a real Session on a scratch home
(no model: the entries are put in the transcript as a turn or a kept conversation would), real
key presses, and the real clipboard of the offscreen platform.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QLabel, QWidget

from app.chat import ChatWindow
from app.chat_entries import Details, Entry, ReplyEntry, ToolCall, ToolEntry, UserEntry
from app.chat_view import (
    MEASURE_CHARS,
    PASTE_PREVIEW_LINES,
    ReplyBubble,
    Segment,
    ToolCard,
    UserBubble,
    split_code,
)
from app.qt_session import QtSession
from tests.app.gui.conftest import make_session, until

LONG_LINE = (
    "subprocess.run(['rsync', '-avz', '--delete', '--exclude', '.cache', "
    "'/home/me/Documents/', 'backup@example.org:/srv/backups/me/Documents/'], check=True)"
)
CODE = f"import subprocess\n{LONG_LINE}\nprint('done')"
REPLY = f"Run this:\n\n```python\n{CODE}\n```\n\nThen check the log."


@pytest.fixture
def window(qtbot, app_home: Path, run) -> Iterator[ChatWindow]:
    assistant = QtSession(make_session(app_home))
    chat = ChatWindow(assistant, lambda: None)
    qtbot.addWidget(chat)
    chat.resize(900, 650)

    async def shown() -> None:
        chat.show()
        await until(chat.isVisible)
        await chat.settled()

    run(shown())
    yield chat
    chat.hide()
    assistant.close()


def show(window: ChatWindow, run, *entries: Entry) -> list[QWidget]:
    window.transcript.load(list(entries))
    run(until(lambda: all(e.widget is not None for e in entries)))
    QApplication.processEvents()
    return [e.widget for e in entries if e.widget is not None]


def tab_until(qtbot, start: QWidget, target: QWidget, presses: int = 40) -> bool:
    """Press Tab from `start` until `target` has the keyboard (True), at most `presses` times."""
    window = start.window()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    start.setFocus()
    for _ in range(presses):
        focus = QApplication.focusWidget()
        assert focus is not None
        qtbot.keyClick(focus, Qt.Key.Key_Tab)
        if QApplication.focusWidget() is target:
            return True
    return False


# --- code blocks ---------------------------------------------------------------------------


def test_a_reply_is_cut_at_its_fenced_code_blocks_with_their_language():
    assert split_code(REPLY) == [
        Segment("Run this:\n"),
        Segment(CODE, code=True, language="python"),
        Segment("\nThen check the log."),
    ]


def test_a_fence_still_open_while_the_reply_streams_runs_to_the_end():
    assert split_code("```sh\nls -l\nrm -i") == [
        Segment(""),
        Segment("ls -l\nrm -i", code=True, language="sh"),
    ]


def test_a_fence_closes_only_on_its_own_kind_and_length():
    text = "~~~~\n```\nstill code\n~~~\n~~~~\nafter"
    assert split_code(text) == [
        Segment(""),
        Segment("```\nstill code\n~~~", code=True),
        Segment("after"),
    ]


def test_backticks_in_a_line_are_not_a_fence():
    text = "Use ```inline``` here\nand more"
    assert split_code(text) == [Segment(text)]


def test_a_long_line_of_code_scrolls_sideways_and_every_character_can_be_brought_into_view(
    window, run
):
    [reply] = show(window, run, ReplyEntry(body=REPLY, status="done"))
    assert isinstance(reply, ReplyBubble)
    [block] = reply.code_blocks()
    view = block.code
    assert view.toPlainText() == CODE  # as written: no fence, no line cut or wrapped
    assert view.document().blockCount() == 3
    line_px = view.fontMetrics().horizontalAdvance(LONG_LINE)
    assert line_px > view.viewport().width()  # the line is longer than the room there is
    bar = view.horizontalScrollBar()
    assert bar.isVisible()
    # Scrolled to the end, the last character is on show.
    bar.setValue(bar.maximum())
    QApplication.processEvents()
    cursor = view.textCursor()
    cursor.movePosition(cursor.MoveOperation.Start)
    cursor.movePosition(cursor.MoveOperation.Down)
    cursor.movePosition(cursor.MoveOperation.EndOfLine)
    end = view.cursorRect(cursor)
    assert 0 <= end.left() <= view.viewport().width()
    # The block is exactly as tall as its lines and the scroll bar: none hidden below.
    assert view.height() >= 3 * view.fontMetrics().lineSpacing() + bar.height()
    # And the text around it is there, in order, as a screen reader reads it.
    assert reply.plain_text() == f"Run this:\n{CODE}\nThen check the log."


def test_copy_is_reached_with_tab_and_copies_exactly_the_code(window, run, qtbot):
    [reply] = show(window, run, ReplyEntry(body=REPLY, status="done"))
    assert isinstance(reply, ReplyBubble)
    [block] = reply.code_blocks()
    assert block.copy.accessibleName() == "Copy code"
    QGuiApplication.clipboard().setText("something else")
    assert tab_until(qtbot, window.input, block.copy)
    qtbot.keyClick(block.copy, Qt.Key.Key_Space)
    assert QGuiApplication.clipboard().text() == CODE
    assert block.copy.text() == "Copied"


def test_each_code_block_copies_its_own_code(window, run):
    body = "One:\n```\nfirst block\n```\nTwo:\n~~~bash\necho second\n~~~\n"
    [reply] = show(window, run, ReplyEntry(body=body, status="done"))
    assert isinstance(reply, ReplyBubble)
    first, second = reply.code_blocks()
    second.copy.click()
    assert QGuiApplication.clipboard().text() == "echo second"
    first.copy.click()
    assert QGuiApplication.clipboard().text() == "first block"
    assert second.language.text() == "bash"
    assert not first.language.isVisibleTo(first)


def test_a_streaming_reply_grows_its_code_block_in_place(window, run):
    entry = ReplyEntry(body="Here:\n```sh\nls", status="streaming")
    [reply] = show(window, run, entry)
    assert isinstance(reply, ReplyBubble)
    [block] = reply.code_blocks()
    entry.body += " -l\ndf -h\n```\nDone."
    reply.refresh()
    assert reply.code_blocks() == [block]  # the same widget, not rebuilt
    assert block.code.toPlainText() == "ls -l\ndf -h"
    assert reply.plain_text().endswith("Done.")


def test_code_left_in_the_text_wraps_rather_than_running_past_the_edge(window, run):
    """An indented code block (no fence) stays in the markdown view, which has no sideways
    scroll bar: its long line wraps instead of being cut off."""
    body = "Try:\n\n    " + LONG_LINE + "\n\nok"
    [reply] = show(window, run, ReplyEntry(body=body, status="done"))
    assert isinstance(reply, ReplyBubble)
    assert reply.code_blocks() == []
    document = reply.view.document()
    assert document.size().width() <= reply.view.viewport().width() + 1
    block = document.findBlock(document.toPlainText().index("subprocess"))
    assert block.layout().lineCount() > 1  # wrapped


# --- long pastes ---------------------------------------------------------------------------


def test_a_long_paste_shows_its_first_lines_until_show_all_is_pressed_with_the_keyboard(
    window, run, qtbot
):
    lines = [f"log line {n}: something happened" for n in range(1, 61)]
    body = "what went wrong here?\n" + "\n".join(lines)
    entry = UserEntry(body=body)
    [bubble] = show(window, run, entry)
    assert isinstance(bubble, UserBubble)
    shown = bubble.label.text()
    assert shown.startswith("what went wrong here?\nlog line 1:")
    assert len(shown.splitlines()) == PASTE_PREVIEW_LINES + 1  # and "…"
    assert "log line 60" not in shown
    assert bubble.toggle is not None
    assert bubble.toggle.text() == "Show all 61 lines"
    assert tab_until(qtbot, window.input, bubble.toggle)
    qtbot.keyClick(bubble.toggle, Qt.Key.Key_Space)
    assert bubble.label.text() == body
    assert bubble.toggle.text() == "Show fewer lines"
    qtbot.keyClick(bubble.toggle, Qt.Key.Key_Space)
    assert "log line 60" not in bubble.label.text()
    # What it showed is kept with the entry: rebuilt (scrolled away and back), it is the same.
    qtbot.keyClick(bubble.toggle, Qt.Key.Key_Space)
    [again] = show(window, run, entry)
    assert isinstance(again, UserBubble)
    assert again.label.text() == body
    assert again.toggle is not None
    assert again.toggle.text() == "Show fewer lines"


def test_one_very_long_pasted_line_is_collapsed_too(window, run):
    body = "summarise: " + "word " * 600
    [bubble] = show(window, run, UserEntry(body=body))
    assert isinstance(bubble, UserBubble)
    assert len(bubble.label.text()) < 1000
    assert bubble.toggle is not None
    assert bubble.toggle.text() == f"Show all {len(body):,} characters"


def test_a_short_message_is_shown_whole_with_nothing_to_expand(window, run):
    [bubble] = show(window, run, UserEntry(body="list my documents\nplease"))
    assert isinstance(bubble, UserBubble)
    assert bubble.label.text() == "list my documents\nplease"
    assert bubble.toggle is None


# --- the measure and the title -------------------------------------------------------------


def test_text_lines_in_a_wide_window_stay_within_a_readable_measure(window, run):
    window.resize(2400, 900)
    paragraph = "A sentence of a reply that goes on for a while, as replies do. " * 12
    [reply] = show(window, run, ReplyEntry(body=paragraph, status="done"))
    assert isinstance(reply, ReplyBubble)
    run(until(lambda: window.transcript.viewport().width() > 1800))
    QApplication.processEvents()
    layout = reply.view.document().firstBlock().layout()
    widths = [layout.lineAt(i).textLength() for i in range(layout.lineCount())]
    assert layout.lineCount() > 3
    assert max(widths) <= MEASURE_CHARS + 10
    assert max(widths) >= 60  # a measure, not a narrow strip


def test_a_long_conversation_title_is_cut_to_fit_and_never_widens_the_window(window):
    window.title.setText("New chat")
    narrow = window.minimumSizeHint().width()
    title = "A conversation about " + "the budget for the third quarter and more " * 8
    window.title.setText(title)
    assert window.minimumSizeHint().width() == narrow
    window.resize(700, 500)
    QApplication.processEvents()
    assert window.width() == 700
    assert window.title.toolTip() == title
    assert window.title.accessibleName() == title
    # What the label paints (ElidedLabel's own text() answers the whole title).
    shown = QLabel.text(window.title)
    assert shown.endswith("…")
    assert len(shown) < len(title)


# --- right-to-left text --------------------------------------------------------------------


def _directions(reply: ReplyBubble) -> dict[str, Qt.LayoutDirection]:
    document = reply.view.document()
    found = {}
    block = document.begin()
    while block.isValid():
        found[block.text()] = block.textDirection()
        block = block.next()
    return found


@pytest.mark.parametrize(
    ("body", "direction"),
    [
        ("Your files:\n\n- `notes.txt`\n- `מתכון לחלה.txt`", Qt.LayoutDirection.LeftToRight),
        ("הקבצים שלך:\n\n- `מתכון לחלה.txt`\n- `notes.txt`", Qt.LayoutDirection.RightToLeft),
    ],
    ids=["an English reply", "a Hebrew reply"],
)
def test_a_reply_reads_in_one_direction_whatever_the_direction_of_a_name_in_it(
    window, run, body, direction
):
    """A list item that is only a Hebrew file name stays on the left of an English reply
    (it flipped to the right edge, its ".txt" first); a Hebrew reply reads right to left, its
    English file name included."""
    [reply] = show(window, run, ReplyEntry(body=body, status="done"))
    assert isinstance(reply, ReplyBubble)
    directions = _directions(reply)
    assert set(directions) >= {"notes.txt", "מתכון לחלה.txt"}
    assert set(directions.values()) == {direction}


# --- keyboard focus ------------------------------------------------------------------------


def ring_pixels(button: QWidget) -> int:
    """Pixels of the highlight colour on the button's own edge, as drawn."""
    image = button.grab().toImage()
    highlight = button.palette().color(QPalette.ColorRole.Highlight)
    edge = [(x, 0) for x in range(image.width())] + [(0, y) for y in range(image.height())]
    return sum(
        all(
            abs(a - b) < 60
            for a, b in zip(
                image.pixelColor(x, y).getRgb()[:3], highlight.getRgb()[:3], strict=True
            )
        )
        for x, y in edge
    )


def test_the_details_and_result_disclosures_show_a_ring_when_tab_reaches_them(window, run, qtbot):
    call = ToolCall("c1", "file_list", "file.read", "~/Documents", status="ok", result="a.txt")
    entries: list[Entry] = [
        ToolEntry(call=call),
        ReplyEntry(body="Done.", status="done", details=Details(intent="file_task")),
    ]
    card, reply = show(window, run, *entries)
    assert isinstance(card, ToolCard)
    assert isinstance(reply, ReplyBubble)
    for button in (card.toggle, reply.details_button):
        assert button.isVisible()
        unfocused = ring_pixels(button)
        assert tab_until(qtbot, window.input, button), button.text()
        assert ring_pixels(button) > unfocused + button.width() // 2, button.text()
