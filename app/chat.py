"""The chat window: past conversations, the transcript of this one, and the box to type in.

It renders what a turn reports (`QtSession.turn_event`): the reply streaming in as markdown, each
tool call as a card, memory lines (Approve, Edit… and Reject for a fact waiting for consent, Undo
for one remembered; they follow changes made in the Memory window), the turn's details on demand.
Conversations are kept through the `ConversationStore` the window is given (when memory is
open), written on the QtSession's io thread; a temporary chat writes nothing at all, and the
broker is told it is temporary so nothing is recalled or remembered either.

The window decides nothing about permissions, routing or memory: it asks the QtSession and shows
the answer. It never blocks the UI thread (every read and write goes through `run_io`) and never
opens a dialog with `exec()` (deleting asks through `app.windows.confirm`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSize, Qt, QTimer, QUrl
from PySide6.QtGui import (
    QCursor,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QScreen,
    QShortcut,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMenuBar,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app import memory_consent
from app.chat_entries import (
    Details,
    Entry,
    MemoryEntry,
    NoticeEntry,
    ReplyEntry,
    ToolCall,
    ToolEntry,
    UserEntry,
)
from app.chat_view import ElidedLabel, Transcript
from app.errors import FrontEnd, worded
from app.mcp_cli import left_out_line
from app.qt_session import Busy, Paused, QtSession
from app.turn_record import TurnRecord, conversation_title, memory_entry
from app.windows.confirm import confirm
from app.windows.palette import problem_color
from app.windows.tasks import Coalesced, spawn
from app.windows.words import waiting_words, when
from broker.conversation import Conversation, save_turn
from broker.events import (
    BackendNamed,
    PermissionAnswered,
    PermissionAsked,
    PolicyDecided,
    Routed,
    TextDelta,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from broker.types import TurnResult
from core.errors import ChamberlainError
from memory.db import MemoryStoreError
from memory.types import FactStatus

if TYPE_CHECKING:
    from broker.conversation import Turn
    from memory.conversations import ChatMessage, ConversationStore

log = logging.getLogger("chamberlain.app.chat")

# Streaming text is re-rendered at most this often (the first piece at once).
RENDER_MS = 50
# How long after a permission question its "waiting for your answer" hint appears: the hint
# row appearing relays out and repaints the whole chat, which would otherwise sit between the
# question reaching the UI thread and its dialog on screen (2-4 ms, bench/prompt_latency.py).
ASKED_HINT_MS = 100
# How long after Enter the person's message is drawn when the turn has reported nothing to show
# below it yet: long enough for a direct action's permission question to be on screen first
# (~10-20 ms, bench/prompt_latency.py), short enough to look immediate (under 100 ms).
MESSAGE_MS = 40
# What a turn reports that adds nothing below the person's message (recorded for Details, or
# shown in a dialog of its own): these do not draw the message ahead of MESSAGE_MS.
_DRAWS_NOTHING = (Routed, PolicyDecided, PermissionAsked, BackendNamed)
# The size the chat opens at where the screen has room for it; on a smaller screen (or a larger
# scale: 1280x800 at 1.5x is 853x533) it opens as big as the screen's free area allows, less
# SCREEN_MARGIN for the window manager's frame and title bar.
CHAT_SIZE = QSize(900, 650)
SCREEN_MARGIN = QSize(32, 72)
MEMORY_CLOSED = "Memory is closed now; nothing was changed."

BUSY_HINT = "Wait for this request to finish, or press Stop, to send your next message."
TEMPORARY_BANNER = "Temporary: nothing is kept or remembered"
NO_MODEL_HINT = (
    "No language model is connected{why}, so Chamberlain can only carry out clear requests "
    "such as “list files in ~/Documents”. To chat, start a local OpenAI-compatible server "
    "(Ollama, LM Studio, llama.cpp server) on its usual port and restart Chamberlain, or set "
    "its address in Settings."
)
# What the person's own failure to save looks like: the store's errors (memory/conversations.py
# words the database's as its own), the disk's.
SAVE_ERRORS = (ChamberlainError, OSError)


@dataclass
class _Turn:
    """The turn this window started and is showing."""

    text: str
    temporary: bool
    turn_id: str | None = None
    reply: ReplyEntry | None = None
    # How it was understood and its tool calls, recorded as the command line's chat records
    # them (app.turn_record); each call's card by call id, and in the order shown.
    record: TurnRecord = field(init=False)
    tools: dict[str, ToolEntry] = field(default_factory=dict)
    cards: list[ToolEntry] = field(default_factory=list)
    # Which model wrote the reply, on the first one of the session (shown below it).
    backend: str = ""
    shown_memory: list[MemoryEntry] = field(default_factory=list)
    ended: bool = False
    rendered_at: float = 0.0
    # The person's message is in the transcript (`ChatWindow._show_message`), and the task
    # keeping it in the history.
    shown: bool = False
    keeping: asyncio.Future[None] | None = None

    def __post_init__(self) -> None:
        self.record = TurnRecord(self.text)


class MessageInput(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line; the window decides whether sending may."""

    def __init__(self, send: Callable[[], None]) -> None:
        super().__init__()
        self._send = send
        self.setTabChangesFocus(True)
        self.setPlaceholderText("Ask Chamberlain…  (Enter sends, Shift+Enter adds a line)")
        self.setAccessibleName("Message")
        self.setAccessibleDescription("Enter sends, Shift+Enter adds a line, Esc hides the window")

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self._send()
            event.accept()
            return
        super().keyPressEvent(event)


class ChatWindow(QWidget):
    """See the module docstring. `history()` is the conversation store, or None when memory is
    not open (then nothing is kept, and the window says so once)."""

    def __init__(
        self,
        assistant: QtSession,
        history: Callable[[], ConversationStore | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.assistant = assistant
        self.history = history
        self.conversation_id: str | None = None
        # The open chat's earlier turns, which each new turn is asked within: a fresh one for
        # New chat (and a temporary chat), rebuilt from the store for a past one.
        self.conversation = Conversation()
        self._turn: _Turn | None = None
        self._said_not_kept = False
        # The app's menu, in a menu bar, where the desktop has no tray (`add_app_menu`).
        self.app_menu: QMenuBar | None = None
        # One message written at a time, in order, and one conversation started for them.
        self._keeping = asyncio.Lock()
        self._pending: set[asyncio.Task[Any]] = set()
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.timeout.connect(self._render_reply)
        self._asked_words = ""
        self._asked_timer = QTimer(self)
        self._asked_timer.setSingleShot(True)
        self._asked_timer.timeout.connect(lambda: self._hint(self._asked_words))
        self.setWindowTitle("Chat")  # Qt adds " — Chamberlain" (app/windows/words.py)
        self.setAccessibleName("Chamberlain chat")
        self._build()
        self.fit_to_screen(QGuiApplication.screenAt(QCursor.pos()))
        assistant.turn_event.connect(self._on_event)
        assistant.memory_changed.connect(self._memory_changed)
        self._catch_up = Coalesced(self._catch_up_with_memory)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.hide)
        QShortcut(QKeySequence("Ctrl+N"), self, self.new_chat)
        self._update_controls()

    # -- layout ------------------------------------------------------------------------------

    def _build(self) -> None:
        sidebar = QWidget()
        side = QVBoxLayout(sidebar)
        side.setContentsMargins(8, 8, 4, 8)
        self.new_button = QPushButton("&New chat")
        self.new_button.setAccessibleName("New chat")
        self.new_button.setToolTip("Start a new conversation (Ctrl+N)")
        self.new_button.clicked.connect(self.new_chat)
        side.addWidget(self.new_button)
        self.conversation_list = QListWidget()
        self.conversation_list.setAccessibleName("Past conversations")
        self.conversation_list.setAccessibleDescription("Newest first; Enter opens one")
        self.conversation_list.setUniformItemSizes(True)
        self.conversation_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.conversation_list.setWordWrap(False)
        self.conversation_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.conversation_list.itemActivated.connect(self._open_item)
        self.conversation_list.itemClicked.connect(self._open_item)
        self.conversation_list.currentItemChanged.connect(lambda *_: self._update_controls())
        side.addWidget(self.conversation_list, 1)
        self.delete_button = QPushButton("&Delete…")
        self.delete_button.setAccessibleName("Delete the selected conversation for good")
        self.delete_button.clicked.connect(lambda: self._start(self.delete_selected()))
        QShortcut(
            QKeySequence(QKeySequence.StandardKey.Delete),
            self.conversation_list,
            lambda: self._start(self.delete_selected()),
            context=Qt.ShortcutContext.WidgetShortcut,
        )
        side.addWidget(self.delete_button)

        main = QWidget()
        column = QVBoxLayout(main)
        column.setContentsMargins(4, 8, 8, 8)
        column.setSpacing(6)
        header = QHBoxLayout()
        # Cut to the room there is: a long title must not make the window wider than the screen.
        self.title = ElidedLabel("New chat", "Conversation title")
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title.setFont(font)
        header.addWidget(self.title, 1)
        self.temporary_toggle = QCheckBox("&Temporary chat")
        self.temporary_toggle.setAccessibleName("Temporary chat")
        self.temporary_toggle.setToolTip(
            "A temporary chat is not kept, and nothing in it is recalled or remembered"
        )
        self.temporary_toggle.toggled.connect(self._temporary_toggled)
        header.addWidget(self.temporary_toggle)
        column.addLayout(header)

        self.temporary_banner = self._banner(TEMPORARY_BANNER, "Temporary chat notice")
        self.model_hint = self._banner("", "No model notice")
        self.history_note = self._banner("", "Conversations not kept notice")
        for banner in (self.temporary_banner, self.model_hint, self.history_note):
            column.addWidget(banner)

        self.transcript = Transcript()
        self.transcript.link_activated.connect(self._link)
        self.transcript.undo_requested.connect(lambda entry: self._start(self.undo(entry)))
        self.transcript.approve_requested.connect(lambda e: self._start(self.approve(e)))
        self.transcript.reject_requested.connect(lambda e: self._start(self.reject(e)))
        self.transcript.edit_requested.connect(lambda e, text: self._start(self.edit(e, text)))
        self.transcript.remember_requested.connect(lambda e: self._start(self.remember(e)))
        column.addWidget(self.transcript, 1)

        self.hint = QLabel("")
        self.hint.setWordWrap(True)
        self.hint.setAccessibleName("Status")
        self.hint.setForegroundRole(self.hint.foregroundRole())
        self.hint.hide()
        column.addWidget(self.hint)

        row = QHBoxLayout()
        self.input = MessageInput(self.submit)
        self.input.setMaximumHeight(80)
        self.input.setMinimumHeight(48)
        row.addWidget(self.input, 1)
        buttons = QVBoxLayout()
        self.send_button = QPushButton("&Send")
        self.send_button.setAccessibleName("Send")
        self.send_button.setDefault(False)
        self.send_button.clicked.connect(self.submit)
        self.stop_button = QPushButton("St&op")
        self.stop_button.setAccessibleName("Stop the running request")
        self.stop_button.clicked.connect(self.stop)
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        row.addLayout(buttons)
        column.addLayout(row)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(sidebar)
        splitter.addWidget(main)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([220, 680])
        splitter.setChildrenCollapsible(False)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(splitter)
        self.input.setFocus()

    def add_app_menu(self, menu: QMenu) -> None:
        """Carry the app's menu (the tray's) in a menu bar: on a desktop with no tray it is the
        only way to Pause, Revoke all, open the other windows and Quit."""
        bar = QMenuBar(self)
        bar.setAccessibleName("Chamberlain menu bar")
        bar.addMenu(menu)
        layout = self.layout()
        assert layout is not None
        layout.setMenuBar(bar)
        self.app_menu = bar

    def _banner(self, text: str, name: str) -> QLabel:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setAccessibleName(name)
        label.setMargin(6)
        label.setStyleSheet(
            "background: palette(alternate-base); border: 1px solid palette(mid);"
            " border-radius: 6px;"
        )
        label.hide()
        return label

    def _start(self, work: Coroutine[Any, Any, Any]) -> None:
        task = spawn(work)
        if task is not None:
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def settled(self) -> None:
        """Wait until the work this window started (reads, writes, turns) has finished."""
        while self._pending:
            await asyncio.wait(set(self._pending))

    # -- showing -----------------------------------------------------------------------------

    def fit_to_screen(self, screen: QScreen | None = None) -> None:
        """Size the window to CHAT_SIZE, or less to fit `screen`'s free area (the primary
        screen's when None), and centre it there, so the message box and Stop are on screen."""
        screen = screen or QGuiApplication.primaryScreen()
        if screen is None:
            return
        room = screen.availableGeometry()
        width = max(1, min(CHAT_SIZE.width(), room.width() - SCREEN_MARGIN.width()))
        height = max(1, min(CHAT_SIZE.height(), room.height() - SCREEN_MARGIN.height()))
        self.resize(width, height)
        # move() places the frame: its title bar goes above the height given here.
        frame = SCREEN_MARGIN.height() // 2
        self.move(
            room.x() + (room.width() - width) // 2,
            room.y() + max(0, (room.height() - height - frame) // 2),
        )

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._update_controls()
        self._start(self.refresh())

    async def refresh(self) -> None:
        """List the past conversations again (on the io thread)."""
        store = self.history()
        if store is None:
            self.conversation_list.clear()
            if self.assistant.session.memory_problem:
                self._say_not_kept()
            self._update_controls()
            return
        try:
            found = await self.assistant.run_io(store.conversations)
        except SAVE_ERRORS as exc:
            self._hint(f"Past conversations could not be read: {exc}", problem=True)
            return
        self.conversation_list.clear()
        for conversation in found:
            item = QListWidgetItem(conversation.title)
            item.setData(Qt.ItemDataRole.UserRole, conversation.id)
            plural = "" if conversation.messages == 1 else "s"
            item.setToolTip(
                f"{conversation.title}\n{when(conversation.updated_at)} · "
                f"{conversation.messages} message{plural}"
            )
            self.conversation_list.addItem(item)
            if conversation.id == self.conversation_id:
                self.conversation_list.setCurrentItem(item)
        self._update_controls()

    def focusNextPrevChild(self, next: bool) -> bool:
        """Tab and Shift+Tab: the message box and its buttons stay last, after whatever the
        transcript holds (Qt puts a control added later at the end of the order, so a reply's
        buttons came after Send)."""
        self._keep_input_last()
        return super().focusNextPrevChild(next)

    def _keep_input_last(self) -> None:
        last = self.previousInFocusChain()
        if last is None or last is self.stop_button:
            return
        QWidget.setTabOrder(last, self.input)
        QWidget.setTabOrder(self.input, self.send_button)
        QWidget.setTabOrder(self.send_button, self.stop_button)

    def _update_controls(self) -> None:
        running = self._turn is not None
        self.send_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
        self.new_button.setEnabled(not running)
        self.conversation_list.setEnabled(not running)
        self.temporary_toggle.setEnabled(not running)
        self.delete_button.setEnabled(
            not running and self.conversation_list.currentItem() is not None
        )
        self.temporary_banner.setVisible(self.temporary_toggle.isChecked())
        session = self.assistant.session
        if session.model is None:
            why = f" ({session.model_problem.rstrip('.')})" if session.model_problem else ""
            self.model_hint.setText(NO_MODEL_HINT.format(why=why))
        self.model_hint.setVisible(session.model is None)

    def _say_not_kept(self) -> None:
        """Once per window: conversations are not kept this time, and why."""
        if self._said_not_kept:
            return
        self._said_not_kept = True
        why = self.assistant.session.memory_problem or "memory is not open"
        self.history_note.setText(f"Conversations are not kept this time: {why.rstrip('.')}.")
        self.history_note.show()

    def _hint(self, text: str, *, problem: bool = False) -> None:
        self._asked_timer.stop()  # a later hint replaces a question's that is still to come
        color = problem_color(self.palette()).name() if problem else ""
        style = f"color: {color};" if color else ""
        # Called on every turn's start and on each permission question: setting a style sheet
        # re-polishes the label even when it is the same, on the UI thread that is about to
        # build the question's dialog. Only what changed is set.
        if self.hint.styleSheet() != style:
            self.hint.setStyleSheet(style)
        if self.hint.text() != text:
            self.hint.setText(text)
            self.hint.setAccessibleDescription(text)
        self.hint.setVisible(bool(text))

    # -- conversations -----------------------------------------------------------------------

    def new_chat(self) -> None:
        if self._turn is not None:
            return
        self.conversation_id = None
        self.conversation = Conversation(temporary=self.temporary_toggle.isChecked())
        self.transcript.clear()
        self.title.setText("Temporary chat" if self.temporary_toggle.isChecked() else "New chat")
        self.conversation_list.clearSelection()
        self.conversation_list.setCurrentRow(-1)
        self._hint("")
        self._update_controls()
        self.input.setFocus()

    def _temporary_toggled(self, on: bool) -> None:
        # A temporary chat starts afresh, and so does leaving one: neither mixes with the other.
        self.new_chat()

    def _open_item(self, item: QListWidgetItem) -> None:
        conversation_id = item.data(Qt.ItemDataRole.UserRole)
        if isinstance(conversation_id, str) and conversation_id != self.conversation_id:
            self._start(self.open_conversation(conversation_id, item.text()))

    async def open_conversation(self, conversation_id: str, title: str = "") -> None:
        """Show a past conversation's messages."""
        store = self.history()
        if store is None or self._turn is not None:
            return
        try:
            messages = await self.assistant.run_io(store.messages, conversation_id)
        except SAVE_ERRORS as exc:
            self._hint(f"This conversation could not be opened: {exc}", problem=True)
            return
        if self.temporary_toggle.isChecked():
            self.temporary_toggle.blockSignals(True)
            self.temporary_toggle.setChecked(False)
            self.temporary_toggle.blockSignals(False)
        self.conversation_id = conversation_id
        self.conversation = Conversation.from_messages(conversation_id, messages)
        self.title.setText(title or "Conversation")
        self.transcript.load(entries_of(messages))
        self._hint("")
        self._update_controls()
        if self.transcript.memory_entries():
            await self._catch_up()  # a line's fact may have been approved or forgotten since

    async def delete_selected(self) -> None:
        """Delete the selected conversation for good, once the person confirms."""
        item = self.conversation_list.currentItem()
        store = self.history()
        if item is None or store is None or self._turn is not None:
            return
        conversation_id = item.data(Qt.ItemDataRole.UserRole)
        title = item.text()
        if not await confirm(
            self,
            "Delete this conversation?",
            f"Delete “{title}” and all its messages for good? It cannot be undone.",
            "Delete",
        ):
            return
        try:
            await self.assistant.run_io(store.delete, conversation_id)
        except SAVE_ERRORS as exc:
            self._hint(f"“{title}” could not be deleted: {exc}", problem=True)
            return
        if conversation_id == self.conversation_id:
            self.new_chat()
        self._hint(f"Deleted “{title}”.")
        await self.refresh()

    async def _keep(self, role: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Write one message of this (kept) conversation on the io thread."""
        async with self._keeping:
            await self._keep_one(role, text, meta)

    async def _keep_one(self, role: str, text: str, meta: dict[str, Any] | None) -> None:
        store = self.history()
        if store is None:
            self._say_not_kept()
            return
        try:
            if self.conversation_id is None:
                started = await self.assistant.run_io(store.start, conversation_title(text))
                self.conversation_id = started.id
                self.title.setText(started.title)
            await self.assistant.run_io(store.add, self.conversation_id, role, text, meta)
        except SAVE_ERRORS as exc:
            log.warning("a chat message was not kept: %s", exc)
            self._hint(f"This message was not kept in the history: {exc}", problem=True)

    async def _save_turn(
        self,
        turn: _Turn,
        conversation: Conversation,
        kept: Turn,
        reply: str,
        result: TurnResult,
    ) -> None:
        """Save the turn the session appended to `conversation` (the person's message is saved
        already): its tool calls with their results, and the reply as shown, with the cards
        and details the transcript shows (broker.conversation.save_turn)."""
        store = self.history()
        if store is None:
            return
        plain = turn.reply is not None and turn.reply.plain
        cards, meta = turn.record.kept_meta(kept, result, plain=plain)
        # Saving the person's message started the conversation (`_keep_one`).
        is_open = conversation is self.conversation
        if is_open:
            conversation.id = self.conversation_id
        user_saved = conversation.id is not None
        try:
            await self.assistant.run_io(
                lambda: save_turn(
                    store,
                    conversation,
                    kept,
                    user_saved=user_saved,
                    title=conversation_title(kept.text),
                    shown_reply=reply,
                    tool_meta=cards,
                    reply_meta=meta,
                )
            )
        except SAVE_ERRORS as exc:
            log.warning("a chat reply was not kept: %s", exc)
            self._hint(f"This reply was not kept in the history: {exc}", problem=True)
            return
        if is_open:
            self.conversation_id = conversation.id

    # -- sending -----------------------------------------------------------------------------

    def submit(self) -> None:
        """Send what is typed, unless a turn is running (the text stays, with a hint)."""
        text = self.input.toPlainText().strip()
        if not text:
            return
        begun = self._begin(text)
        if begun is not None:
            self.input.clear()
            self._start(self._carry(*begun))

    async def send(self, text: str) -> TurnResult | None:
        """Ask `text` as one turn and show it; None when the QtSession refused to start it."""
        begun = self._begin(text)
        return None if begun is None else await self._carry(*begun)

    def _begin(
        self, text: str, *, remember: bool = False
    ) -> tuple[_Turn, asyncio.Future[TurnResult], Conversation] | None:
        """Hand `text` to the turn thread now, within the chat open now; None (with why, and
        the text left in the input) when it cannot start.

        The person's message is drawn MESSAGE_MS later, or sooner when the turn reports
        anything to show below it (`_on_event`): drawing it (a new bubble polished and laid
        out, the transcript repainted) while the turn is routed and checked had made a direct
        action's permission question wait for the UI thread and the interpreter behind it
        (`bench/prompt_latency.py`)."""
        if self._turn is not None:
            self._hint(BUSY_HINT)
            return None
        temporary = self.temporary_toggle.isChecked()
        # The turn is asked within, and kept in, the chat open now.
        conversation = self.conversation
        try:
            asking = self.assistant.begin(
                text, temporary=temporary, conversation=conversation, remember=remember
            )
        except (Busy, Paused) as exc:
            # Not sent: say why, and give the text back to send again later.
            self.transcript.append(NoticeEntry(body=f"Not sent. {exc}", tone="warning"))
            if not self.input.toPlainText():
                self.input.setPlainText(text)
            return None
        turn = _Turn(text=text, temporary=temporary)
        self._turn = turn
        self._hint("")
        self._update_controls()
        QTimer.singleShot(MESSAGE_MS, self, lambda: self._show_message(turn))
        return turn, asking, conversation

    async def _carry(
        self, turn: _Turn, asking: asyncio.Future[TurnResult], conversation: Conversation
    ) -> TurnResult | None:
        """Wait for the turn `_begin` started, then show how it ended and keep it."""
        new_conversation = self.conversation_id is None
        try:
            result = await asking
        finally:
            if not asking.done():  # this window's own wait was cancelled before the turn's
                asking.cancel()
            # However the turn ended (even by a bug), the window takes messages again.
            self._turn = None
            self._update_controls()
        self._show_message(turn)
        self._finish(turn, result.status, result)
        if not turn.temporary:
            if turn.keeping is not None:
                await turn.keeping  # the person's message first, then the reply
            await self._keep_turn(turn, result, conversation)
            if new_conversation:
                await self.refresh()
        return result

    def stop(self) -> None:
        if self.assistant.stop():
            self._hint("Stopping…")

    async def _keep_turn(self, turn: _Turn, result: TurnResult, conversation: Conversation) -> None:
        reply = turn.reply.body if turn.reply is not None else ""
        if reply or turn.cards or result.status != "cancelled":
            kept = conversation.turns[-1] if conversation.turns else None
            if kept is not None and kept.text == turn.text:
                async with self._keeping:
                    await self._save_turn(turn, conversation, kept, reply, result)
        for notice in turn.shown_memory:
            await self._keep("notice", notice.body, notice.to_meta())
        if result.status == "cancelled":
            await self._keep("notice", result.reply or "Stopped.", {"kind": "stopped"})

    # -- what the turn reports ---------------------------------------------------------------

    def _show_message(self, turn: _Turn) -> None:
        """The person's message at the bottom of the transcript, once."""
        if not turn.shown:
            turn.shown = True
            self.transcript.append(UserEntry(body=turn.text))
            self.transcript.scroll_to_bottom()
        self._keep_message(turn)

    def _keep_message(self, turn: _Turn) -> None:
        """Keep the person's message in the history, once it is shown and the turn has really
        started (not when it was refused)."""
        if turn.shown and turn.keeping is None and turn.turn_id is not None and not turn.temporary:
            turn.keeping = asyncio.ensure_future(self._keep("user", turn.text))
            self._pending.add(turn.keeping)
            turn.keeping.add_done_callback(self._pending.discard)

    def _on_event(self, event: TurnEvent) -> None:
        turn = self._turn
        if turn is None or turn.ended:
            return
        if isinstance(event, TurnStarted):
            if turn.turn_id is None and event.text == turn.text:
                turn.turn_id = event.turn_id
                self._keep_message(turn)
            return
        if not isinstance(event, _DRAWS_NOTHING):
            # What the turn reports goes below the message that asked for it. (Until the turn
            # has something to show, the message waits for MESSAGE_MS: a question's dialog
            # goes on screen first.)
            self._show_message(turn)
        if event.turn_id != turn.turn_id:
            return  # a turn started elsewhere (another window)
        if isinstance(event, PermissionAsked):
            # After the question's dialog is on screen, not before it (ASKED_HINT_MS).
            self._asked_words = waiting_words(event.tool, event.capability, event.scope)
            self._asked_timer.start(ASKED_HINT_MS)
        elif isinstance(event, PermissionAnswered):
            self._hint("")
        elif (call := turn.record.take(event, lambda new: self._card(turn, new))) is not None:
            self.transcript.refresh(turn.tools[call.call_id])
        elif isinstance(event, TextDelta):
            if turn.reply is None:
                turn.reply = ReplyEntry()
                self.transcript.append(turn.reply)
            turn.reply.body += event.text
            self._schedule_render()
        elif isinstance(event, BackendNamed):
            turn.backend = event.text
        elif isinstance(event, TurnEnded):
            self._finish(turn, event.status, event.result)

    def _card(self, turn: _Turn, call: ToolCall) -> None:
        """Show the card of a call that just appeared (started, or denied before it could)."""
        # Text after a tool call goes below its card, not into the text above it.
        self._render_reply()
        turn.reply = None
        entry = ToolEntry(call=call)
        turn.tools[call.call_id] = entry
        turn.cards.append(entry)
        self.transcript.append(entry)

    def _schedule_render(self) -> None:
        turn = self._turn
        if turn is None:
            return
        waited = (time.monotonic() - turn.rendered_at) * 1000
        if waited >= RENDER_MS:
            self._render_reply()
        elif not self._render_timer.isActive():
            self._render_timer.start(max(1, int(RENDER_MS - waited)))

    def _render_reply(self) -> None:
        turn = self._turn
        if turn is None or turn.reply is None:
            return
        turn.rendered_at = time.monotonic()
        self.transcript.refresh(turn.reply)

    def _finish(self, turn: _Turn, status: str, result: TurnResult) -> None:
        """Show how the turn ended: the final reply, memory lines, "Stopped." (once)."""
        if turn.ended:
            return
        turn.ended = True
        self._render_timer.stop()
        for card in turn.cards:
            if card.call.status == "running":  # stopped while it ran, and never reported
                card.call.status = "cancelled"
                self.transcript.refresh(card)
        # The reply is the model's own; what memory did is shown below it, each as its own
        # line (with Undo), from the turn's typed events (`result.memory`).
        said = result.reply.strip()
        reply = worded(said, result.remedy, FrontEnd.APP)
        # A turn with no reply text (a fact that waits for consent) keeps its Details at the
        # turn's end, under its memory lines, not alone above them.
        late = status != "cancelled" and turn.reply is None and not reply and bool(result.memory)
        if status == "cancelled":
            # What had streamed stays, as it was; the turn ends with the broker's "Stopped.".
            if turn.reply is not None:
                turn.reply.status = "cancelled"
                turn.reply.details = turn.record.details
                self.transcript.refresh(turn.reply)
            self.transcript.append(NoticeEntry(body=reply or "Stopped.", tone="stopped"))
        else:
            if turn.reply is None:
                turn.reply = ReplyEntry()
                if not late:
                    self.transcript.append(turn.reply)
            turn.reply.body = reply
            turn.reply.plain = any(
                (card.call.result or "").strip() == reply for card in turn.cards if reply
            )
            # A request that could not be carried out reads as such (its reply says why).
            turn.reply.status = "failed" if result.failed else status
            turn.reply.details = turn.record.details
            self.transcript.refresh(turn.reply)
        if turn.backend and status != "cancelled":
            self.transcript.append(NoticeEntry(body=turn.backend, tone="info"))
        for left_out in result.mcp_left_out:
            said = left_out_line(left_out, retry="Test in Settings › MCP servers")
            self.transcript.append(NoticeEntry(body=said[:1].upper() + said[1:], tone="warning"))
        for event in result.memory:
            entry = memory_entry(event)
            turn.shown_memory.append(entry)
            self.transcript.append(entry)
        if late and turn.reply is not None:
            self.transcript.append(turn.reply)
        self._hint("")
        self._update_controls()

    # -- memory ------------------------------------------------------------------------------

    async def remember(self, entry: MemoryEntry) -> TurnResult | None:
        """The person's yes to an offered fact (Remember): a turn that remembers their words, as
        "remember that …" does — its sensitivity checks and consent apply (a sensitive fact then
        waits for Approve in the line that turn shows)."""
        if entry.state != "offered" or entry.busy or not entry.text:
            return None
        begun = self._begin(entry.text, remember=True)
        if begun is None:
            return None  # a turn is running: the line keeps its button, the hint says why
        entry.state, entry.note = "plain", "You said yes."
        self.transcript.refresh(entry)
        return await self._carry(*begun)

    async def approve(self, entry: MemoryEntry) -> None:
        """Remember a fact that waits for the person's consent (Approve, or Save unchanged)."""
        await self._settle(entry, "Not approved", memory_consent.approve)

    async def reject(self, entry: MemoryEntry) -> None:
        """Keep nothing of a fact that waits for consent."""
        await self._settle(entry, "Not rejected", memory_consent.reject)

    async def edit(self, entry: MemoryEntry, text: str) -> None:
        """Remember the person's own words in place of the waiting fact."""
        await self._settle(entry, "Not saved", memory_consent.edit, text)

    async def _settle(
        self,
        entry: MemoryEntry,
        failed: str,
        work: Callable[..., memory_consent.Settled],
        *args: Any,
    ) -> None:
        if entry.state != "waiting" or entry.fact_id is None or entry.busy:
            return
        memory = self.assistant.session.memory
        if memory is None:
            entry.problem = MEMORY_CLOSED
            self.transcript.refresh(entry)
            return
        entry.busy, entry.problem = True, ""
        self.transcript.refresh(entry)
        try:
            settled = await self.assistant.change_memory(self, work, memory, entry.fact_id, *args)
        except MemoryStoreError as exc:
            # The line keeps its buttons (and the editor what was typed): try again, or not.
            entry.problem = f"{failed}: {exc}" if failed not in str(exc) else str(exc)
        else:
            entry.editing = False
            fact = settled.fact
            if settled.outcome == "rejected" or fact is None:
                entry.state, entry.note = "rejected", "Rejected."
                entry.body = f"Not remembered: {entry.text}" if entry.text else entry.body
            else:
                entry.state, entry.fact_id, entry.text = "kept", fact.id, fact.text
                entry.body = f"Remembered: {fact.text}"
                entry.note = "Approved." if settled.outcome == "approved" else "Your edit."
        finally:
            entry.busy = False
        self.transcript.refresh(entry)
        self._focus_after(entry)

    async def undo(self, entry: MemoryEntry) -> None:
        """Forget a fact this chat just remembered, or one the person asked to forget."""
        if entry.state not in ("kept", "forgettable") or entry.fact_id is None or entry.busy:
            return
        memory = self.assistant.session.memory
        if memory is None:
            entry.problem = MEMORY_CLOSED
            self.transcript.refresh(entry)
            return
        entry.busy, entry.problem = True, ""
        self.transcript.refresh(entry)
        try:
            await self.assistant.change_memory(self, memory.forget, entry.fact_id)
        except MemoryStoreError as exc:
            entry.problem = f"Not forgotten: {exc}"
        else:
            entry.state, entry.note = "forgotten", "Forgotten."
        finally:
            entry.busy = False
        self.transcript.refresh(entry)
        self._focus_after(entry)

    def _focus_after(self, entry: MemoryEntry) -> None:
        """The button pressed may be gone now: the keyboard goes back to the message box rather
        than to nowhere."""
        widget = entry.widget
        focus = QApplication.focusWidget()
        if widget is not None and (focus is None or not focus.isVisible()):
            self.input.setFocus()

    def _memory_changed(self, origin: object) -> None:
        if origin is not self and self.transcript.memory_entries():
            self._start(self._catch_up())

    async def _catch_up_with_memory(self) -> None:
        """Lines whose fact was approved, edited, rejected or forgotten elsewhere (the Memory
        window) say so, and stop offering what no longer applies."""
        memory = self.assistant.session.memory
        entries = [e for e in self.transcript.memory_entries() if not e.busy]
        if memory is None or not entries:
            return
        ids = [e.fact_id for e in entries if e.fact_id]
        try:
            found = await self.assistant.run_io(memory_consent.status_of, memory, ids)
        except MemoryStoreError as exc:
            log.warning("the memory lines could not be checked: %s", exc)
            return
        for entry in entries:
            if entry.busy or entry.fact_id not in found:
                continue  # acted on while the store was read: that answer is newer
            status = found[entry.fact_id]
            if status is FactStatus.PENDING and entry.state == "waiting":
                continue
            if status in (FactStatus.ACTIVE, FactStatus.PENDING) and entry.state == "forgettable":
                continue  # still there to forget
            if status is FactStatus.ACTIVE:
                if entry.state == "kept":
                    continue
                entry.state, entry.note = "kept", "Approved in Memory."
                entry.body = f"Remembered: {entry.text}" if entry.text else entry.body
            elif status is FactStatus.SUPERSEDED:
                entry.state, entry.note = "plain", "Since replaced by a newer version."
            elif entry.state == "waiting":
                entry.state, entry.note = "rejected", "Rejected in Memory."
                entry.body = f"Not remembered: {entry.text}" if entry.text else entry.body
            else:
                entry.state, entry.note = "forgotten", "Forgotten."
            entry.editing = False
            self.transcript.refresh(entry)

    # -- links -------------------------------------------------------------------------------

    def _link(self, url: QUrl) -> None:
        # A reply's link opens nothing by itself: it could point anywhere the model chose.
        text = url.toString()
        QGuiApplication.clipboard().setText(text)
        self._hint(f"Links are not opened automatically. Copied to the clipboard: {text}")


def entries_of(messages: list[ChatMessage]) -> list[Entry]:
    """A kept conversation as transcript entries: cards before the reply they led to."""
    entries: list[Entry] = []
    # A reply with no text (a fact that waits for consent) is shown after its turn's memory
    # lines, as the chat showed it when the turn ended.
    late: ReplyEntry | None = None
    for message in messages:
        if late is not None and message.meta.get("kind") != "memory":
            entries.append(late)
            late = None
        if message.role == "user":
            entries.append(UserEntry(body=message.text))
        elif message.role == "assistant":
            meta = message.meta
            for card in meta.get("tools", []):
                if isinstance(card, dict):
                    entries.append(ToolEntry(call=ToolCall.from_meta(card)))
            details = meta.get("details")
            reply = ReplyEntry(
                body=message.text,
                plain=bool(meta.get("plain", False)),
                status=str(meta.get("status", "done")),
                details=Details.from_meta(details) if isinstance(details, dict) else None,
            )
            if message.text.strip():
                entries.append(reply)
            else:
                late = reply
        elif message.role == "tool":
            entries.append(ToolEntry(call=ToolCall.from_meta(message.meta)))
        elif message.meta.get("kind") == "memory":
            entries.append(MemoryEntry.from_meta(message.text, message.meta))
        else:
            stopped = message.meta.get("kind") == "stopped"
            entries.append(NoticeEntry(body=message.text, tone="stopped" if stopped else "info"))
    if late is not None:
        entries.append(late)
    return entries
