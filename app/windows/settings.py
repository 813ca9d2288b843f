"""The Settings window: the settings a person changes most, checked by the settings model itself.

Every edit is checked by building the candidate ``Settings`` from the edited values
(``Settings.model_validate``), so the window holds no range or rule of its own: each
validation error is shown beside the field it names, the first bad field takes the focus, and
nothing is saved until every field is valid. The model server's address is checked as it is
typed (once typing pauses, and when the field is left) by ``broker.llm.endpoints``, which alone
says what an address is, and saved as the base URL it normalises to. A setting an environment
variable sets (``CHAMBERLAIN_SECTION__KEY``) is shown greyed, naming the variable; saving keeps
settings.json's own value for it (``save_settings`` never writes the environment's). Saving
writes ``settings.json`` (``save_settings``) on the QtSession's io thread, then updates the
running session's settings in place where that is safe, and says which changes wait for the next
start. An API key goes to the system keyring only (``broker.keys``); with no keyring the window
says so beside the field and writes the key nowhere. Start at login writes or removes the XDG
autostart entry (``app.autostart``).
The tool profile is chosen from the bundled ones (``broker.profiles``); beneath it the window
says what that profile would leave out of the tools installed now (``resolve``, the session's
own resolver, with the person's settings.json changes to it), again whenever MCP servers' tools
change. The person's finer changes (``profile.add_tools`` and the rest) stay in settings.json.
The MCP servers section (``app.windows.mcp_servers``) saves each server change on its own, at
once, and reconnects the session's servers; the Save button below saves the other fields.
Every save seals what it writes (``broker.settings_seal``). At the top, "Confirm changes made
outside Chamberlain" lists what another program changed in settings.json among the settings that
widen reach, in full, with Confirm and Discard; until then those changes are not used.

What it must never do: save a value the model rejects, write an API key to any file, probe any
address but the loopback ports ``broker.llm.endpoints`` names, or block the UI thread (the
probe, the keyring and every file write run through ``QtSession.run_io``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QPalette, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QKeySequenceEdit,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app import autostart
from app.errors import FrontEnd, user_message, worded
from app.global_shortcut import GlobalShortcut, qt_text
from app.qt_session import QtSession
from app.windows.fields import SettingField
from app.windows.mcp_servers import McpServersSection
from app.windows.palette import problem_color
from app.windows.placement import resize_to_fit
from app.windows.tasks import spawn
from app.windows.words import tool_words
from broker.keys import (
    KeyringUnavailable,
    api_keyring_problem,
    delete_api_key,
    load_api_key,
    save_api_key,
)
from broker.llm import endpoints
from broker.llm.endpoints import InvalidEndpoint, normalise_url
from broker.profiles import ProfileError, resolve
from broker.settings import (
    Settings,
    SettingsError,
    confirm_pending,
    discard_pending,
    environment_variables,
    read_settings,
    save_settings,
)
from broker.settings_seal import PendingChange

log = logging.getLogger("chamberlain.app.windows.settings")

# The llm.url choices that are not an address.
AUTO, EMBEDDED, NONE, CUSTOM = "auto", "embedded", "none", "custom"

# Settings the running session reads as it goes (the section objects are updated in place):
# they apply to the next request. The permission broker copies its two at start, so the
# window hands it the new values too. Everything else shown here waits for the next start.
_LIVE = frozenset(
    {
        "router.confidence_threshold",
        "executor.max_iterations",
        "memory.allow_remote",
        "permissions.prompt_timeout_s",
        "permissions.timed_default_minutes",
        "profile.name",
    }
)
# Shown in the window, so the person knows before saving.
_AFTER_RESTART = {
    "tools.screenshot_retention_days": "screenshot retention",
    "chat.retention_days": "conversation retention",
    "tools.command_memory_mb": "a command's memory limit",
    "tools.command_max_processes": "a command's process limit",
    "tools.command_cpu_s": "a command's CPU time limit",
    "tools.command_shm_mb": "a command's /dev/shm",
}

# (settings path, label with its mnemonic, what the number means). Typed as text and parsed by
# the model, so a bad value is the model's error, shown beside the field, never clamped away.
_NUMBERS: tuple[tuple[str, str, str], ...] = (
    (
        "router.confidence_threshold",
        "Router refinement threshold",
        "0 to 1. When the router is less sure than this of what you asked, the model checks.",
    ),
    ("executor.max_iterations", "Iteration &budget", "1 to 10 model steps per request."),
    (
        "permissions.timed_default_minutes",
        "Default timed &grant",
        "Minutes the permission question's “Allow for” answer offers first.",
    ),
    (
        "permissions.prompt_timeout_s",
        "Permission dialog time&out",
        "Seconds before an unanswered permission question is denied.",
    ),
    (
        "tools.screenshot_retention_days",
        "Keep screens&hots for",
        "Days. Older screenshots are deleted at the next capture; applies after a restart.",
    ),
    (
        "tools.command_memory_mb",
        "Command memor&y",
        "MiB each program of a command may use; a command that needs more is stopped, saying so.",
    ),
    (
        "tools.command_max_processes",
        "Command processes",
        "How many processes one command may run at once.",
    ),
    (
        "tools.command_cpu_s",
        "Command CPU time budget",
        "Seconds of processor time one command may use; raise it with the command time limit.",
    ),
    (
        "tools.command_shm_mb",
        "Command shared memory",
        "MiB of /dev/shm inside a command's sandbox.",
    ),
    (
        "chat.retention_days",
        "Keep conversat&ions for",
        "Days since a conversation was last used; 0 keeps them forever. Applies at the next "
        "start. Temporary chats are never kept.",
    ),
)


_URL_HINTS = {
    AUTO: (
        "Tries the usual local ports (Ollama, LM Studio, llama.cpp, vLLM) at each start, and "
        "uses the embedded model when none answers."
    ),
    EMBEDDED: (
        "SmolLM2-135M, bundled and offline: fine for chat, weak at anything harder. A larger "
        "local model (Ollama, LM Studio) gives much better answers."
    ),
    NONE: "Without a model, Chamberlain only carries out requests it can do directly.",
    CUSTOM: "The base address of an OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1.",
    "detected": "A server running on this computer now.",
}


def local_servers(timeout_s: float = 0.3) -> list[tuple[str, str]]:
    """(name, base URL) of every local model server that answers, probed on loopback only, on
    the ports "auto" would try (one short GET of /models each)."""
    return [(server.name, server.base_url) for server in endpoints.local_servers(timeout_s)]


def _env_override(path: str) -> str | None:
    """The environment variable that sets `path` (or its whole section) over settings.json."""
    variables = environment_variables()
    return variables.get(path) or variables.get(path.split(".", 1)[0])


def _sentence(text: str) -> str:
    """`text` as a sentence a person reads: a capital first, a full stop last."""
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else ".")


def address_problem(text: str) -> str | None:
    """What is wrong with `text` as a model server's address, in the app's words (None: it is
    one). broker.llm.endpoints decides what an address is; this only words its refusal."""
    if not text.strip():
        return "Type the model server's address, e.g. http://127.0.0.1:11434/v1."
    try:
        normalise_url(text)
    except InvalidEndpoint as exc:
        return _sentence(user_message(exc, FrontEnd.APP) or str(exc))
    return None


# How long typing pauses before the address is checked: a half-typed "http:" is not yet wrong.
_CHECK_AFTER_MS = 400


def _number_text(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _shown_key(shortcut: str) -> str:
    """A saved key as this desktop writes it ("Ctrl+Alt+Space")."""
    return QKeySequence(shortcut).toString(QKeySequence.SequenceFormat.NativeText)


def _path_of(loc: Sequence[int | str]) -> str:
    return ".".join(str(part) for part in loc)


class OutsideChanges(QGroupBox):
    """ "Confirm changes made outside Chamberlain": each change another program (or the person,
    by hand) made in settings.json to a setting that widens reach (broker.settings_seal), in
    full — an MCP server's whole command line — with Confirm and Discard. Hidden when nothing
    waits. Confirm seals exactly what it showed (a file changed again since is refused) and
    applies it to the running session; Discard puts the values in use back into the file."""

    def __init__(self, window: SettingsWindow) -> None:
        super().__init__("Confirm changes made outside Chamberlain")
        self.setObjectName("outside-changes")
        self.setAccessibleName("Confirm changes made outside Chamberlain")
        self.window_ = window
        self.pending: tuple[PendingChange, ...] = ()
        layout = QVBoxLayout(self)
        intro = QLabel(
            "Chamberlain's settings file was changed by another program or by hand. These "
            "changes let Chamberlain reach more, so they are not used until you confirm them; "
            "meanwhile the settings you last confirmed are in use."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.changes = QLabel()
        self.changes.setObjectName("outside-changes-list")
        # The file is hostile input: shown as plain text, never as rich text.
        self.changes.setTextFormat(Qt.TextFormat.PlainText)
        self.changes.setWordWrap(True)
        self.changes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.changes)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.discard_button = QPushButton("&Discard")
        self.discard_button.setObjectName("discard-outside")
        self.discard_button.setAccessibleName("Discard the changes made outside Chamberlain")
        self.discard_button.clicked.connect(self._discard_clicked)
        self.confirm_button = QPushButton("&Confirm")
        self.confirm_button.setObjectName("confirm-outside")
        self.confirm_button.setAccessibleName("Confirm the changes made outside Chamberlain")
        # Confirming is never the default: Enter anywhere in the window must not confirm.
        self.confirm_button.setAutoDefault(False)
        self.confirm_button.clicked.connect(self._confirm_clicked)
        buttons.addWidget(self.discard_button)
        buttons.addWidget(self.confirm_button)
        layout.addLayout(buttons)
        self.setVisible(False)

    def _confirm_clicked(self) -> None:
        spawn(self.confirm())

    def _discard_clicked(self) -> None:
        spawn(self.discard())

    @property
    def home(self) -> Any:
        return self.window_.assistant.session.home

    def show_pending(self, pending: Sequence[PendingChange]) -> None:
        self.pending = tuple(pending)
        from tools.escapes import visible

        self.changes.setText("\n".join(f"• {visible(c.describe())}" for c in self.pending))
        self.setVisible(bool(self.pending))

    async def reload(self) -> None:
        """Read settings.json again (on the io thread) and show what waits."""
        try:
            loaded = await self.window_.assistant.run_io(read_settings, self.home)
        except SettingsError as exc:
            self.window_._say(_sentence(user_message(exc, FrontEnd.APP) or str(exc)), problem=True)
            return
        self.show_pending(loaded.pending)

    async def confirm(self) -> bool:
        shown = self.pending
        try:
            await self.window_.assistant.run_io(
                lambda: confirm_pending(self.home, [c.key for c in shown], shown=shown)
            )
            loaded = await self.window_.assistant.run_io(read_settings, self.home)
        except (SettingsError, OSError) as exc:
            self.window_._say(_failed("confirmed", exc, self.home), problem=True)
            await self.reload()
            return False
        self.show_pending(loaded.pending)
        await self.window_.use_confirmed(loaded.settings)
        return True

    async def discard(self) -> bool:
        shown = self.pending
        try:
            await self.window_.assistant.run_io(
                lambda: discard_pending(self.home, [c.key for c in shown])
            )
        except (SettingsError, OSError) as exc:
            self.window_._say(_failed("discarded", exc, self.home), problem=True)
            await self.reload()
            return False
        await self.reload()
        self.window_._say("Discarded: settings.json holds the settings in use again.")
        return True


def _failed(done: str, exc: Exception, home: Any) -> str:
    if isinstance(exc, OSError):
        return (
            f"Nothing was {done}: {home} could not be written ({exc.strerror or exc}). Check "
            "that it is writable."
        )
    return f"Nothing was {done}: {user_message(exc, FrontEnd.APP) or exc}."


class SettingsWindow(QWidget):
    """Settings for the QtSession's session. See the module docstring."""

    def __init__(
        self,
        assistant: QtSession,
        parent: QWidget | None = None,
        *,
        autostart_command: Sequence[str] | None = None,
        chat_shortcut: GlobalShortcut | None = None,
    ) -> None:
        super().__init__(parent)
        self.assistant = assistant
        # The desktop-wide key that opens the chat, taken again when a new one is saved.
        self.chat_shortcut = chat_shortcut
        self._autostart_command = list(autostart_command or autostart.default_command())
        self._detected: list[tuple[str, str]] = []
        self._probed = False
        self._key_saved = False
        # Settings an environment variable sets this run (path → variable): shown, not edited.
        self._from_env: dict[str, str] = {}
        self._address_said = False  # the url field shows what is wrong with the typed address
        self.fields: dict[str, SettingField] = {}
        # The address is checked once typing pauses, and at once when the field is left.
        self._url_check = QTimer(self)
        self._url_check.setSingleShot(True)
        self._url_check.setInterval(_CHECK_AFTER_MS)
        self._url_check.timeout.connect(self.check_address)
        self.setWindowTitle("Settings")  # Qt adds " — Chamberlain" (words.py)
        self.setObjectName("settings-window")
        self.setAccessibleName("Settings")
        resize_to_fit(self, 720, 820)  # at most what the screen holds
        self._build()
        self.load()

    # -- building ------------------------------------------------------------------------------

    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        # Not a Tab stop of its own (it would be an invisible first stop): it scrolls to
        # whichever field takes the focus.
        scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(16, 16, 16, 8)
        layout.setSpacing(12)
        self.outside = OutsideChanges(self)
        layout.addWidget(self.outside)
        layout.addWidget(self._model_group())
        layout.addWidget(self._behaviour_group())
        layout.addWidget(self._privacy_group())
        layout.addWidget(self._tools_group())
        self.mcp = McpServersSection(self.assistant)
        layout.addWidget(self.mcp)
        layout.addWidget(self._startup_group())
        layout.addStretch(1)
        # One label column for every group, so the fields line up down the window.
        captions = [c for c in body.findChildren(QLabel) if c.objectName() == "caption"]
        width = max(c.sizeHint().width() for c in captions)
        for caption in captions:
            caption.setMinimumWidth(width)
            caption.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        scroll.setWidget(body)
        outer.addWidget(scroll, 1)
        self._scroll = scroll
        # A field given the focus by its Alt-key (or by an error) is scrolled into sight; the
        # scroll area itself only does so for Tab.
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._show_focused)

        line = QFrame()
        line.setFrameShape(QFrame.Shape.HLine)
        line.setFrameShadow(QFrame.Shadow.Sunken)
        outer.addWidget(line)
        footer = QHBoxLayout()
        footer.setContentsMargins(16, 8, 16, 12)
        self.status = QLabel()
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # may quote what a model or file wrote
        self.status.setObjectName("settings-status")
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Settings status")
        self.status.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        footer.addWidget(self.status, 1)
        self.revert_button = QPushButton("Re&vert")
        self.revert_button.setAccessibleName("Revert to the saved settings")
        self.revert_button.clicked.connect(self._revert)
        self.save_button = QPushButton("&Save")
        self.save_button.setAccessibleName("Save settings")
        self.save_button.setDefault(True)
        self.save_button.setAutoDefault(True)
        self.save_button.clicked.connect(self._save_clicked)
        footer.addWidget(self.revert_button)
        footer.addWidget(self.save_button)
        outer.addLayout(footer)
        save = QShortcut(QKeySequence(QKeySequence.StandardKey.Save), self)
        save.activated.connect(self._save_clicked)
        close = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        close.activated.connect(self.close)

    def _show_focused(self, old: QWidget | None, new: QWidget | None) -> None:
        if self.chat_shortcut is not None:
            # While keys are pressed in the box, the key in use is not taken from the desktop:
            # pressed there to choose it again, it would open the chat instead.
            if new is self.shortcut_edit:
                self.chat_shortcut.pause()
            elif old is self.shortcut_edit:
                self.chat_shortcut.resume()
        body = self._scroll.widget()
        if new is None or body is None or not body.isAncestorOf(new):
            return
        # The whole row where it fits: the field with its hint or error beneath.
        shown: QWidget = new
        parent = new.parentWidget()
        while parent is not None and parent is not body:
            if isinstance(parent, SettingField):
                if parent.height() < self._scroll.viewport().height() - 32:
                    shown = parent
                break
            parent = parent.parentWidget()
        self._scroll.ensureWidgetVisible(shown, 16, 16)

    # Slots are bound methods, not lambdas holding `self`: a lambda makes a reference cycle,
    # and a cycle may be collected on the io thread, where destroying a widget is an error.
    def _save_clicked(self) -> None:
        spawn(self.save())

    def _detect_clicked(self) -> None:
        spawn(self.detect_servers())

    def _forget_key_clicked(self) -> None:
        spawn(self.remove_api_key())

    def _form(self, title: str) -> tuple[QGroupBox, QFormLayout]:
        group = QGroupBox(title)
        group.setAccessibleName(title)
        form = QFormLayout(group)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        form.setVerticalSpacing(10)
        return group, form

    def _row(
        self,
        form: QFormLayout,
        path: str,
        label: str,
        editor: QWidget,
        hint: str = "",
        trailing: Sequence[QWidget] = (),
    ) -> SettingField:
        plain = label.replace("&", "")
        editor.setObjectName(path)
        editor.setAccessibleName(plain)
        field = SettingField(editor, hint, trailing)
        field.set_error(None)
        caption = QLabel(label + ":")
        caption.setObjectName("caption")
        caption.setBuddy(editor)
        # Top-aligned (hints and errors grow the field downwards), level with the input's text.
        lift = min(8, max(0, (editor.sizeHint().height() - caption.sizeHint().height()) // 2))
        caption.setContentsMargins(0, lift, 0, 0)
        form.addRow(caption, field)
        self.fields[path] = field
        return field

    def _model_group(self) -> QGroupBox:
        group, form = self._form("Model")
        self.url_choice = QComboBox()
        self.url_custom = QLineEdit()
        self.url_custom.setObjectName("llm.url.custom")
        self.url_custom.setAccessibleName("Model server address")
        self.url_custom.setPlaceholderText("http://127.0.0.1:11434/v1")
        self.url_custom.setClearButtonEnabled(True)
        self.detect_button = QPushButton("&Find local servers")
        self.detect_button.setAccessibleName("Find local model servers")
        self.detect_button.clicked.connect(self._detect_clicked)
        self._row(
            form,
            "llm.url",
            "&Model server",
            self.url_choice,
            _URL_HINTS[AUTO],
            [self.detect_button],
        )
        # The address box sits under the choice, inside the same field.
        field = self.fields["llm.url"]
        layout = field.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.insertWidget(1, self.url_custom)
        self.url_choice.currentIndexChanged.connect(self._url_choice_changed)
        self.url_choice.activated.connect(self._recheck_key)
        self.url_custom.textChanged.connect(self._url_text_changed)
        self.url_custom.editingFinished.connect(self.check_address)
        self.url_custom.editingFinished.connect(self._recheck_key)

        self.model_name = QLineEdit()
        self.model_name.setPlaceholderText("The server's default model")
        self.model_name.setClearButtonEnabled(True)
        self._row(form, "llm.model", "Model &name", self.model_name)

        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setClearButtonEnabled(True)
        self.forget_key = QPushButton("Remove key")
        self.forget_key.setAccessibleName("Remove the saved API key")
        self.forget_key.clicked.connect(self._forget_key_clicked)
        self._row(
            form,
            "llm.api_key",
            "API &key",
            self.api_key,
            "Kept in the system keyring, never in a file. Local servers usually need none.",
            [self.forget_key],
        )
        return group

    def _behaviour_group(self) -> QGroupBox:
        group, form = self._form("Requests and permissions")
        self.numbers: dict[str, QLineEdit] = {}
        for path, label, hint in _NUMBERS:
            if path.startswith(("tools.", "chat.")):
                continue
            self._number_row(form, path, label, hint)
        return group

    def _number_row(self, form: QFormLayout, path: str, label: str, hint: str) -> None:
        edit = QLineEdit()
        edit.setMaximumWidth(140)
        edit.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.numbers[path] = edit
        self._row(form, path, label, edit, hint)

    def _privacy_group(self) -> QGroupBox:
        group, form = self._form("Memory and privacy")
        self.allow_remote = QPlainTextEdit()
        self.allow_remote.setTabChangesFocus(True)
        self.allow_remote.setPlaceholderText("https://models.example.com/v1")
        self.allow_remote.setFixedHeight(self.fontMetrics().lineSpacing() * 4 + 12)
        self._row(
            form,
            "memory.allow_remote",
            "&Trusted remote servers",
            self.allow_remote,
            "One address per line. A model on this computer may see every remembered fact; a "
            "remote one sees only low-sensitivity facts, unless it is listed here.",
        )
        for path, label, hint in _NUMBERS:
            if path.startswith(("tools.screenshot", "chat.")):
                self._number_row(form, path, label, hint)
        return group

    def _tools_group(self) -> QGroupBox:
        group, form = self._form("Tools")
        self.profile_choice = QComboBox()
        self.profile_choice.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.profile_choice.setMaximumWidth(220)  # short names: not stretched across the row
        for profile in self.assistant.session.profiles.profiles:
            self.profile_choice.addItem(profile.name, profile.name)
            index = self.profile_choice.count() - 1
            self.profile_choice.setItemData(index, profile.description, Qt.ItemDataRole.ToolTipRole)
        field = self._row(form, "profile.name", "Tool &profile", self.profile_choice)
        # Under the choice: its description (the hint), what it leaves out now, where the finer
        # changes are made; errors stay last.
        self.profile_leaves_out = QLabel()
        self.profile_leaves_out.setObjectName("profile-leaves-out")
        self.profile_leaves_out.setTextFormat(Qt.TextFormat.PlainText)  # MCP tools' names
        self.profile_leaves_out.setWordWrap(True)
        self.profile_leaves_out.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
        )
        finer = QLabel("Finer changes: profile.add_tools / deny_tools in settings.json.")
        finer.setWordWrap(True)
        finer.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        layout = field.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.insertWidget(2, self.profile_leaves_out)
        layout.insertWidget(3, finer)
        self.profile_choice.currentIndexChanged.connect(self._profile_changed)
        # Queued onto the UI thread (the hub emits from its own); a bound method, not a lambda.
        self.assistant.mcp_changed.connect(self._profile_changed)
        for path, label, hint in _NUMBERS:
            if path.startswith("tools.command_"):
                self._number_row(form, path, label, hint)
        return group

    def _startup_group(self) -> QGroupBox:
        group, form = self._form("Start-up and appearance")
        self.start_at_login = QCheckBox("Start Chamberlain when I log in")
        self._row(form, "autostart", "Start-up", self.start_at_login)
        self.shortcut_edit = QKeySequenceEdit()
        self.shortcut_edit.setMaximumSequenceLength(1)  # one chord, as a desktop key is
        self.shortcut_edit.setClearButtonEnabled(True)
        self.shortcut_edit.setMaximumWidth(220)
        self._row(
            form,
            "chat.shortcut",
            "Open chat &with",
            self.shortcut_edit,
            "A key pressed anywhere on the desktop brings up the chat. Click the box and press "
            "the keys you want; clear it to turn the key off.",
        )
        if self.chat_shortcut is not None:
            self.chat_shortcut.changed.connect(self._show_shortcut_state)
        theme = QLabel("Light or dark follows your system’s theme.")
        theme.setWordWrap(True)
        theme.setAccessibleName("Light or dark follows your system’s theme")
        caption = QLabel("Appearance:")
        caption.setObjectName("caption")
        form.addRow(caption, theme)
        return group

    # -- showing the saved settings --------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.assistant.session.settings

    def load(self) -> None:
        """Show the session's settings (what is saved), clearing every error."""
        settings = self.settings
        self._fill_url_choice(settings.llm.url)
        self.model_name.setText(settings.llm.model or "")
        self.api_key.clear()
        for path, edit in self.numbers.items():
            section, name = path.split(".")
            edit.setText(_number_text(getattr(getattr(settings, section), name)))
        self.allow_remote.setPlainText("\n".join(settings.memory.allow_remote))
        self.shortcut_edit.setKeySequence(QKeySequence(settings.chat.shortcut))
        self.start_at_login.setChecked(autostart.is_enabled())
        for field in self.fields.values():
            field.set_error(None)
        self._from_env = {}
        for path, field in self.fields.items():
            variable = _env_override(path)
            field.editor.setEnabled(variable is None)
            if variable is not None:
                self._from_env[path] = variable
                field.set_note(
                    f"Set by the environment variable {variable} for this run, so it cannot be "
                    "changed here; saving keeps the value in settings.json as it is."
                )
        from_env = "llm.url" in self._from_env
        self.url_custom.setEnabled(not from_env)
        self.detect_button.setEnabled(not from_env)
        self._choose_profile(settings.profile.name)
        self._update_key_row()
        self._show_shortcut_state()
        self.mcp.refresh()

    def _take_shortcut(self, shortcut: str) -> str:
        """Take the newly saved key from the desktop now; what the person should know."""
        if self.chat_shortcut is None:
            return ""
        problem = self.chat_shortcut.start(shortcut)
        if not shortcut:
            return "No key opens the chat now."
        if problem is None:
            return f"{_shown_key(shortcut)} now opens the chat from anywhere."
        return problem

    def _show_shortcut_state(self) -> None:
        """Beside the key: why it does nothing (taken by another program, or a desktop that
        lets no program take keys), or nothing when it works."""
        if "chat.shortcut" in self._from_env:
            return  # the note names the variable
        field = self.fields["chat.shortcut"]
        problem = self.chat_shortcut.problem if self.chat_shortcut is not None else None
        if problem is not None:
            field.set_note(problem, problem=True)
        else:
            field.set_note("")

    def _fill_url_choice(self, current: str) -> None:
        choice = self.url_choice
        choice.blockSignals(True)
        choice.clear()
        choice.addItem("Automatic (first local server found, else the embedded model)", AUTO)
        choice.addItem("Embedded model (offline, small)", EMBEDDED)
        choice.addItem("No model", NONE)
        for name, url in self._detected:
            choice.addItem(f"{name} — {url}", url)
        choice.addItem("Another address…", CUSTOM)
        value = current.strip()
        keyword = value.lower() in (AUTO, EMBEDDED, NONE)
        index = choice.findData(value.lower() if keyword else value)
        if index < 0:
            index = choice.findData(CUSTOM)
            self.url_custom.setText(value)
        choice.setCurrentIndex(index)
        choice.blockSignals(False)
        self._url_choice_changed()

    def _choose_profile(self, name: str) -> None:
        index = self.profile_choice.findData(name)
        if index < 0:
            # A safeguard: the session refuses to start with a name the table lacks. Such a
            # name is shown as it is, never silently replaced by another profile.
            self.profile_choice.addItem(name, name)
            index = self.profile_choice.count() - 1
        self.profile_choice.setCurrentIndex(index)
        self._profile_changed()

    def _profile_changed(self, *_: object) -> None:
        """The chosen profile's description, and what it would leave out of the tools
        installed now (the MCP servers' tools as the hub lists them at this moment)."""
        field = self.fields["profile.name"]
        name = str(self.profile_choice.currentData())
        session = self.assistant.session
        try:
            profile = session.profiles.get(name)
        except ProfileError as exc:
            field.hint.setText("")
            field.hint.hide()
            self.profile_leaves_out.setText(str(exc))
            self.profile_leaves_out.setToolTip("")
            return
        field.hint.setText(profile.description)
        field.hint.setVisible(not field.message)
        manuals = {tool.name: tool.manual for tool in session.tools}
        overrides = session.settings.profile
        resolved = resolve(name, session.profiles, manuals, overrides)
        changed = bool(
            overrides.add_categories
            or overrides.remove_categories
            or overrides.add_tools
            or overrides.deny_tools
        )
        installed = f"the {len(manuals)} tools installed now"
        if resolved.dropped:
            text = f"Leaves out {len(resolved.dropped)} of {installed}: "
            text += ", ".join(tool_words(tool) for tool in resolved.dropped)
        else:
            text = f"Leaves nothing out of {installed}"
        text += " (counting your changes in settings.json)." if changed else "."
        self.profile_leaves_out.setText(text)
        self.profile_leaves_out.setToolTip(
            # With the id too: settings.json's add_tools and deny_tools name tools by it.
            "\n".join(
                f"{tool_words(tool)} ({tool}): {why}" for tool, why in resolved.dropped.items()
            )
        )
        self.profile_choice.setAccessibleDescription(f"{profile.description} {text}")

    def _url_choice_changed(self, *_: object) -> None:
        data = self.url_choice.currentData()
        custom = data == CUSTOM
        self.url_custom.setVisible(custom)
        field = self.fields["llm.url"]
        field.hint.setText(_URL_HINTS.get(str(data), _URL_HINTS["detected"]))
        # A model name is a server's: the embedded model and "no model" take none.
        serverless = data in (EMBEDDED, NONE)
        self.model_name.setEnabled(not serverless and "llm.model" not in self._from_env)
        self.model_name.setPlaceholderText(
            "Not used without a server" if serverless else "The server's default model"
        )
        if "llm.url" in self._from_env:
            pass  # the note names the variable; nothing here replaces it
        elif not custom:
            if self._address_said:
                field.set_error(None)  # an address typed before no longer counts
                self._address_said = False
            if serverless:
                field.set_note("")  # what this choice means, rather than which servers answered
        elif self.isVisible():
            self.url_custom.setFocus()
            if self.url_custom.text():
                self.check_address()
        self._update_key_row()

    def _url_text_changed(self, *_: object) -> None:
        self._key_saved = False  # until the keyring is asked about this address
        self._update_key_row()
        self._url_check.start()

    def check_address(self) -> str | None:
        """Say beside the address what is wrong with it (or take back what was said): the
        problem, None when the address is fine or not the one chosen."""
        self._url_check.stop()
        if self.url_choice.currentData() != CUSTOM or "llm.url" in self._from_env:
            return None
        field = self.fields["llm.url"]
        problem = address_problem(self.url_custom.text())
        if problem is not None:
            field.set_error(problem)
        elif self._address_said:
            field.set_error(None)  # only what was said of the address, not a note of servers found
        self._address_said = problem is not None
        return problem

    def _recheck_key(self, *_: object) -> None:
        """Ask the keyring (on the io thread) whether the chosen server has a key saved."""
        self._key_saved = False
        self._update_key_row()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a test driving the window without its loop
        spawn(self._check_saved_key())

    def _chosen_url(self) -> str:
        data = self.url_choice.currentData()
        return self.url_custom.text().strip() if data == CUSTOM else str(data)

    def _key_url(self) -> str | None:
        """The endpoint an API key would belong to: an address, not auto or none."""
        url = self._chosen_url()
        if url.lower() in (AUTO, EMBEDDED, NONE, ""):
            return None
        try:
            return normalise_url(url)
        except InvalidEndpoint:
            return None

    def _update_key_row(self, *_: object) -> None:
        field = self.fields["llm.api_key"]
        url = self._key_url()
        problem = api_keyring_problem(self.settings.llm.api_key_env)
        self.api_key.setEnabled(url is not None and problem is None)
        self.forget_key.setEnabled(url is not None and problem is None and self._key_saved)
        if problem is not None:
            self.api_key.setPlaceholderText("No system keyring here")
            field.set_note(problem)
        elif url is None:
            self.api_key.setPlaceholderText("Choose a server first")
            field.set_note("")
        else:
            self.api_key.setPlaceholderText(
                "A key is saved; type a new one to replace it"
                if self._key_saved
                else "Paste the server's API key"
            )

    # -- detecting servers ---------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._probed:
            return
        self._probed = True
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a test driving the window without its loop; the button still works
        spawn(self.refresh())

    async def refresh(self) -> None:
        """What needs the io thread: changes made outside Chamberlain, the local servers, and
        whether a key is saved."""
        await self.outside.reload()
        await self.detect_servers()
        await self._check_saved_key()

    async def detect_servers(self) -> list[tuple[str, str]]:
        """Probe the local ports (on the io thread) and list the servers that answer. Not
        while an environment variable sets the server: the choice is not the person's here."""
        field = self.fields["llm.url"]
        if "llm.url" in self._from_env:
            return []
        self.detect_button.setEnabled(False)
        field.set_note("Looking for local model servers…")
        try:
            found = await self.assistant.run_io(local_servers)
        finally:
            self.detect_button.setEnabled(True)
        self._detected = found
        current = self._chosen_url()
        self._fill_url_choice(current)
        if self.url_choice.currentData() == CUSTOM and self.check_address() is not None:
            pass  # what is wrong with the typed address stays beside it
        elif self.url_choice.currentData() in (EMBEDDED, NONE):
            field.set_note("")
        elif found:
            names = ", ".join(name for name, _ in found)
            field.set_note(f"Found running here: {names}.", good=True)
        else:
            ports = ", ".join(str(port) for _, port in endpoints.PROBE_PORTS)
            field.set_note(f"No local model server answered (ports {ports}).")
        return found

    async def _check_saved_key(self) -> None:
        url = self._key_url()
        saved = url is not None and bool(await self.assistant.run_io(load_api_key, url))
        if self._key_url() == url:  # not another address chosen meanwhile
            self._key_saved = saved
            self._update_key_row()

    # -- checking and saving -------------------------------------------------------------------

    def candidate(self) -> tuple[Settings | None, dict[str, str]]:
        """The settings as edited, checked by the model: (settings, {}) or (None, errors by
        field path)."""
        data: dict[str, Any] = self.settings.model_dump()
        errors: dict[str, str] = {}
        url = self._chosen_url()
        if "llm.url" in self._from_env:
            url = self.settings.llm.url  # not the person's to change here; saving keeps the file's
        elif url.lower() not in (AUTO, EMBEDDED, NONE):
            problem = address_problem(url)
            if problem is not None:
                errors["llm.url"] = problem
            else:
                url = normalise_url(url)  # saved as the base URL the model client uses
        data["llm"]["url"] = url
        serverless = url.lower() in (EMBEDDED, NONE)
        data["llm"]["model"] = None if serverless else (self.model_name.text().strip() or None)
        for path, edit in self.numbers.items():
            section, name = path.split(".")
            data[section][name] = edit.text().strip()
        remote: list[str] = []
        for line in self.allow_remote.toPlainText().splitlines():
            if not line.strip():
                continue
            try:
                remote.append(normalise_url(line))
            except InvalidEndpoint:
                errors.setdefault("memory.allow_remote", address_problem(line) or "")
        data["memory"]["allow_remote"] = remote
        data["profile"]["name"] = str(self.profile_choice.currentData())
        if "chat.shortcut" not in self._from_env:
            data["chat"]["shortcut"] = qt_text(self.shortcut_edit.keySequence())
        try:
            checked = Settings.model_validate(data)
        except ValidationError as exc:
            for error in exc.errors():
                path = self._field_for(_path_of(error["loc"]))
                message = str(error["msg"]).removeprefix("Value error, ")
                errors.setdefault(path, _sentence(message))
            return None, errors
        return (None, errors) if errors else (checked, {})

    def _field_for(self, path: str) -> str:
        """The field showing a settings path (a list item's error goes to its list)."""
        while path and path not in self.fields:
            path = path.rpartition(".")[0]
        return path or "status"

    def show_errors(self, errors: dict[str, str]) -> None:
        first: SettingField | None = None
        for path, field in self.fields.items():
            if path in ("llm.api_key", "autostart"):
                continue
            message = errors.get(path)
            if message is None and field.editor.isEnabled():
                field.set_error(None)
            elif message is not None:
                field.set_error(message)
                first = first or field
        if first is not None:
            first.editor.setFocus()
        if errors:
            self._say(
                errors.get("status") or "Nothing was saved: fix the fields marked in red.",
                problem=True,
            )

    async def save(self) -> bool:
        """Check every field; when all are valid, save, apply what can be applied now, and
        say what waits for a restart. False (and nothing saved) when a field is invalid."""
        checked, errors = self.candidate()
        if checked is None:
            self.show_errors(errors)
            return False
        self.show_errors({})
        self.save_button.setEnabled(False)
        try:
            try:
                await self.assistant.run_io(save_settings, self.assistant.session.home, checked)
            except OSError as exc:
                self._say(
                    f"The settings could not be saved ({exc.strerror or exc}); nothing changed. "
                    f"Check that {self.assistant.session.home} is writable.",
                    problem=True,
                )
                return False
            except SettingsError as exc:
                self._say(_sentence(user_message(exc, FrontEnd.APP) or str(exc)), problem=True)
                return False
            changed = self._apply(checked)
            if self.url_choice.currentData() == CUSTOM and "llm.url" not in self._from_env:
                self.url_custom.setText(checked.llm.url)  # as saved: the normalised address
            notes = [await self._save_autostart()]
            if "chat.shortcut" in changed:
                notes.append(self._take_shortcut(checked.chat.shortcut))
            key_saved = await self._save_api_key(checked)
            if key_saved or any(p.startswith("llm.") for p in changed):
                notes.append(await self._reconnect())
        finally:
            self.save_button.setEnabled(True)
        self._say(self._summary(changed, [n for n in notes if n]))
        return True

    async def use_confirmed(self, confirmed: Settings) -> None:
        """Apply settings the person just confirmed: in the session, the fields, the servers."""
        changed = self._apply(confirmed)
        self.load()
        notes: list[str] = []
        if self.assistant.busy:
            notes.append("The MCP servers reconnect after the current request.")
        else:
            await self.assistant.use_mcp(confirmed.mcp)
            self.mcp.refresh()
            if any(p.startswith("llm.") for p in changed):
                notes.append(await self._reconnect())
        self._say(" ".join(["Confirmed; the changes are in use.", *notes]))

    def _apply(self, new: Settings) -> list[str]:
        """Copy the new values into the session's settings objects (the broker holds references
        to the sections, so they are updated in place, not replaced). The changed paths."""
        settings = self.settings
        changed: list[str] = []
        for section_name in type(new).model_fields:
            section = getattr(new, section_name)
            if not isinstance(section, BaseModel):
                continue
            target = getattr(settings, section_name)
            for name in type(section).model_fields:
                value = getattr(section, name)
                if getattr(target, name) != value:
                    setattr(target, name, value)
                    changed.append(f"{section_name}.{name}")
        permissions = self.assistant.session.permissions
        permissions.prompt_timeout_s = settings.permissions.prompt_timeout_s
        permissions.timed_default_s = settings.permissions.timed_default_minutes * 60
        return changed

    async def _save_autostart(self) -> str:
        field = self.fields["autostart"]
        wanted = self.start_at_login.isChecked()
        if wanted == autostart.is_enabled():
            field.set_note("")
            return ""
        try:
            if wanted:
                path = await self.assistant.run_io(autostart.enable, self._autostart_command)
                field.set_note(f"Chamberlain will start at login ({path}).", good=True)
                return "Chamberlain will start when you log in."
            await self.assistant.run_io(autostart.disable)
        except autostart.AutostartError as exc:
            field.set_note(str(exc), problem=True)
            self.start_at_login.setChecked(autostart.is_enabled())
            return "Start at login was not changed."
        field.set_note("")
        return "Chamberlain will no longer start when you log in."

    async def _save_api_key(self, settings: Settings) -> bool:
        typed = self.api_key.text()
        field = self.fields["llm.api_key"]
        url = self._key_url()
        if not typed.strip() or url is None:
            return False
        # The key lives in the field only until it is handed to the keyring (or refused).
        self.api_key.clear()
        try:
            await self.assistant.run_io(
                lambda: save_api_key(url, typed, env_var=settings.llm.api_key_env)
            )
        except KeyringUnavailable as exc:
            field.set_note(str(exc), problem=True)
            return False
        except ValueError as exc:
            field.set_note(str(exc), problem=True)
            return False
        self._key_saved = True
        self._update_key_row()
        field.set_note(f"Saved in the system keyring for {url}.", good=True)
        return True

    async def remove_api_key(self) -> None:
        url = self._key_url()
        field = self.fields["llm.api_key"]
        if url is None:
            return
        try:
            env_var = self.settings.llm.api_key_env
            removed = await self.assistant.run_io(lambda: delete_api_key(url, env_var=env_var))
        except KeyringUnavailable as exc:
            field.set_note(str(exc), problem=True)
            return
        self._key_saved = False
        self._update_key_row()
        field.set_note("The saved key was removed." if removed else "No key was saved.")

    async def _reconnect(self) -> str:
        """Connect the model the new settings name, unless a request is running."""
        if self.assistant.busy:
            return "The model change applies after the current request; save again then."
        from broker.session import connect_model

        session = self.assistant.session
        try:
            choice = await self.assistant.run_io(connect_model, session.settings)
        except InvalidEndpoint as exc:  # an address confirmed from the file, never typed here
            return f"Model: {address_problem(str(session.settings.llm.url)) or exc}"
        problem = worded(choice.problem, choice.remedy, FrontEnd.APP) if choice.problem else None
        session.use_model(choice.model, problem)
        if choice.model is None:
            return f"Model: {problem}"
        return "The model was reconnected with the new settings."

    def _summary(self, changed: list[str], notes: list[str]) -> str:
        if not changed and not notes:
            return "Saved. Nothing had changed."
        waiting = sorted({_AFTER_RESTART[p] for p in changed if p in _AFTER_RESTART})
        parts = ["Saved."]
        if any(p in _LIVE for p in changed):
            parts.append("Changes apply to your next request.")
        if waiting:
            parts.append(f"The {' and '.join(waiting)} apply after a restart.")
        parts.extend(notes)
        return " ".join(parts)

    def _revert(self) -> None:
        self.load()
        self._say("Showing the saved settings.")

    def _say(self, text: str, *, problem: bool = False) -> None:
        color = problem_color(self.palette()).name() if problem else ""
        self.status.setStyleSheet(f"color: {color};" if color else "")
        self.status.setText(text)
