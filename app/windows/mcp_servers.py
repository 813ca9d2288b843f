"""The MCP servers section of the Settings window: which servers Chamberlain may use, how each
one is doing now, and what each of its tools was judged to do.

The list shows the servers `mcp.servers` names, with the live status the session's MCP hub
reports (through `QtSession.mcp_changed`, queued onto the UI thread). A server is added or
edited in the form under the list and saved at once — checked by the settings model itself
(``Settings.model_validate``), so a bad name, a URL off this computer, or a command and a URL
together are the model's own messages, shown beside their fields, and nothing is saved. Saving
writes ``settings.json`` on the QtSession's io thread and then hands the new servers to the
session (``QtSession.use_mcp``), which reconnects them off the UI thread.

What it must never do: block the UI thread (a test or a reconnection runs on the QtSession's
MCP threads), save a configuration the model rejects, or decide what a tool may do — the
classes shown are the hub's; the person's only lever here is to deny a tool.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPalette, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.errors import FrontEnd, user_message
from app.qt_session import QtSession
from app.windows.confirm import confirm
from app.windows.fields import SettingField
from app.windows.palette import good_color, problem_color
from app.windows.tables import EmptyOr, table
from app.windows.tasks import spawn
from broker.events import TurnEnded, TurnEvent
from broker.settings import Settings, SettingsError, save_settings
from tools.mcp.config import McpServerConfig

log = logging.getLogger("chamberlain.app.windows.mcp_servers")

# The default category choices: (shown, saved value).
CATEGORIES: tuple[tuple[str, str | None], ...] = (
    ("Automatic (from each tool's name; unclear ones count as running things)", None),
    ("Read: its tools only look", "read"),
    ("Write: its tools change things", "write"),
    ("Execute: its tools run things", "execute"),
)

_STATE_WORDS = {
    "disabled": "Off",
    "idle": "Not connected",
    "connecting": "Connecting…",
}

_RISK_WORDS = {"safe": "Low", "moderate": "Medium", "dangerous": "High"}

_NAME_RULE = (
    "A name is 1 to 24 characters: lowercase letters, digits and _, starting with a letter "
    "(no “__”, not ending in _)."
)

# The editor's fields, by the key of the server's settings whose errors each one shows.
_FIELD_OF = {"command": "command", "args": "command", "url": "url", "env": "env"}


def _plain(message: str) -> str:
    """A pydantic message as a sentence: no "Value error, " prefix, no backticks."""
    text = message.removeprefix("Value error, ").replace("`", "")
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _row(*cells: str, tip: str = "") -> list[QStandardItem]:
    items = []
    for cell in cells:
        item = QStandardItem(cell)
        item.setEditable(False)
        item.setToolTip(tip or cell)
        items.append(item)
    return items


def _fit(view: QTableView, rows: int, least: int, most: int) -> None:
    """Make a table as tall as its rows (between `least` and `most` of them), so a short list
    leaves no empty box and a long one scrolls."""
    shown = min(max(rows, least), most)
    header = view.horizontalHeader().sizeHint().height()
    frame = 2 * view.frameWidth()
    view.setFixedHeight(header + shown * view.verticalHeader().defaultSectionSize() + frame)


def parse_env(text: str) -> dict[str, str]:
    """KEY=VALUE lines as a mapping (blank lines skipped). ValueError naming a bad line."""
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, equals, value = line.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"Line {number} is not KEY=VALUE: {line.strip()!r}.")
        env[key.strip()] = value
    return env


class McpServersSection(QGroupBox):
    """The "MCP servers" group of the Settings window. See the module docstring."""

    def __init__(self, assistant: QtSession, parent: QWidget | None = None) -> None:
        super().__init__("MCP servers", parent)
        self.assistant = assistant
        self.setAccessibleName("MCP servers")
        self.setObjectName("mcp-servers")
        self.fields: dict[str, SettingField] = {}
        # The server the form edits (None: a new one), and a save waiting for a turn to end.
        self._editing: str | None = None
        self._apply_after_turn = False
        self._rebuilding = False
        self._build()
        assistant.mcp_changed.connect(self.refresh)
        assistant.turn_event.connect(self._on_turn_event)
        if assistant.started:
            assistant.watch_mcp()
        self.refresh()

    # -- building ------------------------------------------------------------------------------

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setSpacing(8)
        intro = QLabel(
            "Programs on this computer that offer Chamberlain more tools. Each tool still asks "
            "before it runs, by what it does: reads, changes things, or runs things."
        )
        intro.setWordWrap(True)
        intro.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        layout.addWidget(intro)

        self.servers = QStandardItemModel(0, 3, self)
        self.servers.setHorizontalHeaderLabels(["Server", "Status", "Runs"])
        self.servers_view = table(
            self.servers, "MCP servers list", "The configured MCP servers and how each is doing"
        )
        header = self.servers_view.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(1, 220)
        self.servers_view.selectionModel().currentRowChanged.connect(self._on_selected)
        self.servers_view.doubleClicked.connect(self._edit_clicked)
        self.servers_box = EmptyOr(
            self.servers_view,
            "No MCP servers yet. Add one to give Chamberlain the tools it offers.",
        )
        layout.addWidget(self.servers_box)

        buttons = QHBoxLayout()
        self.add_button = QPushButton("&Add server…")
        self.add_button.clicked.connect(self._add_clicked)
        self.edit_button = QPushButton("&Edit…")
        self.edit_button.clicked.connect(self._edit_clicked)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self._remove_clicked)
        self.test_button = QPushButton("Test connection")
        self.test_button.setAccessibleName("Test the selected MCP server's connection")
        self.test_button.clicked.connect(self._test_clicked)
        for button in (self.add_button, self.edit_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.test_button)
        layout.addLayout(buttons)

        self.message = QLabel()
        self.message.setObjectName("mcp-message")
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # quotes what a server said
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setAccessibleName("MCP server status")
        self.message.hide()
        layout.addWidget(self.message)

        self.tools_panel = self._tools_panel()
        layout.addWidget(self.tools_panel)
        self.editor = self._editor()
        layout.addWidget(self.editor)

    def _tools_panel(self) -> QWidget:
        panel = QWidget()
        layout = QVBoxLayout(panel)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(6)
        self.tools_caption = QLabel()
        self.tools_caption.setTextFormat(Qt.TextFormat.PlainText)  # may quote a server's words
        self.tools_caption.setWordWrap(True)
        self.tools_caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.tools_caption)
        self.tools = QStandardItemModel(0, 4, self)
        self.tools.setHorizontalHeaderLabels(["Tool", "Class", "Risk", "Why that class"])
        self.tools_view = table(
            self.tools, "MCP server tools", "The tools the selected server offers, by class"
        )
        header = self.tools_view.horizontalHeader()
        for column in (0, 1, 2):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.tools_view.selectionModel().currentRowChanged.connect(self._update_deny_button)
        layout.addWidget(self.tools_view)
        row = QHBoxLayout()
        note = QLabel("A denied tool is never offered to the assistant.")
        note.setWordWrap(True)
        note.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        row.addWidget(note, 1)
        self.deny_button = QPushButton("Deny this tool")
        self.deny_button.clicked.connect(self._deny_clicked)
        row.addWidget(self.deny_button)
        layout.addLayout(row)
        panel.hide()
        return panel

    def _editor(self) -> QFrame:
        frame = QFrame()
        frame.setObjectName("mcp-editor")
        frame.setFrameShape(QFrame.Shape.StyledPanel)
        outer = QVBoxLayout(frame)
        outer.setContentsMargins(12, 10, 12, 10)
        self.editor_title = QLabel()
        font = self.editor_title.font()
        font.setBold(True)
        self.editor_title.setFont(font)
        outer.addWidget(self.editor_title)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        form.setVerticalSpacing(8)
        outer.addLayout(form)

        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("notes")
        self._field(form, "name", "Name", self.name_edit, "Its tools are called name__tool.")
        self.command_edit = QLineEdit()
        self.command_edit.setPlaceholderText(
            "npx -y @modelcontextprotocol/server-filesystem /home/me/notes"
        )
        self._field(
            form,
            "command",
            "Command",
            self.command_edit,
            "The program and its arguments, as you would type them in a terminal.",
        )
        self.url_edit = QLineEdit()
        self.url_edit.setPlaceholderText("http://127.0.0.1:8000/mcp")
        self._field(
            form,
            "url",
            "or &URL",
            self.url_edit,
            "A server already running on this computer (streamable HTTP). Give a command or "
            "a URL, not both.",
        )
        self.env_edit = QPlainTextEdit()
        self.env_edit.setTabChangesFocus(True)
        self.env_edit.setPlaceholderText("KEY=VALUE, one per line")
        self.env_edit.setFixedHeight(self.fontMetrics().lineSpacing() * 3 + 12)
        self._field(
            form,
            "env",
            "Environment",
            self.env_edit,
            "Passed to the command and saved in settings.json as written; for a token, write "
            "${env:NAME} to pass Chamberlain's own variable NAME instead.",
        )
        self.category_box = QComboBox()
        for text, value in CATEGORIES:
            self.category_box.addItem(text, value)
        self._field(
            form,
            "category",
            "Tool c&lass",
            self.category_box,
            "How its tools are classed where you have not said otherwise; it decides which "
            "permission each one asks for.",
        )
        self.enabled_box = QCheckBox("Connect to this server")
        self._field(form, "enabled", "", self.enabled_box)
        # The server's sandbox (tools/mcp/sandbox.py): what it may do beyond reading the
        # folders its command names. Running it unsandboxed stays a choice made in the file.
        self.write_box = QCheckBox("May change files in the folders its command names")
        self.write_box.setToolTip(
            "Off: it sees those folders read-only. Your startup files (shell rc files, "
            "autostart, .git) stay read-only either way."
        )
        self._field(form, "write", "Sandbox", self.write_box)
        self.network_box = QCheckBox("May use the internet")
        self.network_box.setToolTip(
            "A network of its own: the internet only, never this computer's other services "
            "or your local network. Off: no network at all."
        )
        self._field(form, "network", "", self.network_box)

        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.close_editor)
        self.save_server_button = QPushButton("Save se&rver")
        self.save_server_button.setAccessibleName("Save this MCP server")
        self.save_server_button.clicked.connect(self._save_server_clicked)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.save_server_button)
        outer.addLayout(buttons)
        frame.hide()
        return frame

    def _field(
        self, form: QFormLayout, key: str, label: str, editor: QWidget, hint: str = ""
    ) -> SettingField:
        editor.setObjectName(f"mcp.{key}")
        editor.setAccessibleName(label.replace("&", "") or key)
        field = SettingField(editor, hint)
        caption = QLabel(label + ":" if label else "")
        caption.setBuddy(editor)
        form.addRow(caption, field)
        self.fields[key] = field
        return field

    # Slots are bound methods (see SettingsWindow): no lambda cycles holding the widget.
    def _add_clicked(self) -> None:
        self.open_editor(None)

    def _edit_clicked(self, *_: object) -> None:
        name = self.selected()
        if name is not None:
            self.open_editor(name)

    def _remove_clicked(self) -> None:
        spawn(self.remove_selected())

    def _test_clicked(self) -> None:
        spawn(self.test_selected())

    def _save_server_clicked(self) -> None:
        spawn(self.save_server())

    def _deny_clicked(self) -> None:
        spawn(self.toggle_selected_tool())

    # -- showing ---------------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.assistant.session.settings

    def configured(self) -> dict[str, McpServerConfig]:
        return dict(self.settings.mcp.servers) if self.assistant.started else {}

    def status_text(self, name: str) -> str:
        """What the list says of `name` now: "Connected, 9 tools", "Failed: …", "Off"…"""
        hub = self.assistant.session.mcp if self.assistant.started else None
        config = self.configured().get(name)
        if config is not None and not config.enabled:
            return "Off"
        if hub is None or name not in hub.names:
            return "Not connected"
        status = hub.server_status(name)
        if status.state in _STATE_WORDS:
            return _STATE_WORDS[status.state]
        summary = status.summary()
        return summary[:1].upper() + summary[1:]

    def selected(self) -> str | None:
        index = self.servers_view.currentIndex()
        if not index.isValid():
            return None
        item = self.servers.item(index.row(), 0)
        return item.text() if item is not None else None

    def select(self, name: str) -> None:
        for row in range(self.servers.rowCount()):
            item = self.servers.item(row, 0)
            if item is not None and item.text() == name:
                self.servers_view.setCurrentIndex(self.servers.index(row, 0))
                return

    def refresh(self) -> None:
        """The list and the selected server's tools, as the hub reports them now. Rows are
        updated in place, so what the person selected stays selected as statuses change."""
        servers = self.configured()
        names = sorted(servers)
        shown = [self.servers.item(row, 0).text() for row in range(self.servers.rowCount())]
        if names != shown:
            chosen = self.selected()
            self._rebuilding = True
            try:
                self.servers.removeRows(0, self.servers.rowCount())
                for name in names:
                    self.servers.appendRow([*_row(name), *_row(""), *_row("")])
                if names:
                    self.select(chosen if chosen in servers else names[0])
            finally:
                self._rebuilding = False
        for row, name in enumerate(names):
            for column, text in ((1, self.status_text(name)), (2, servers[name].describe())):
                item = self.servers.item(row, column)
                item.setText(text)
                item.setToolTip(text)
        _fit(self.servers_view, len(names), 3, 8)
        # The stack (list or "no servers yet") is as tall as the list, with no gap under it.
        self.servers_box.setFixedHeight(self.servers_view.maximumHeight())
        self._show_server()
        self._update_buttons()

    def _on_selected(self, *_: object) -> None:
        if self._rebuilding:
            return
        self._show_server()
        self._update_buttons()

    def _update_buttons(self) -> None:
        chosen = self.selected() is not None
        for button in (self.edit_button, self.remove_button, self.test_button):
            button.setEnabled(chosen)

    def _show_server(self) -> None:
        """The selected server's tools (when connected) and the tools denied in its settings."""
        name = self.selected()
        chosen_tool = self._selected_tool()
        self.tools.removeRows(0, self.tools.rowCount())
        config = self.configured().get(name) if name is not None else None
        if name is None or config is None:
            self.tools_panel.hide()
            return
        hub = self.assistant.session.mcp
        status = hub.server_status(name) if hub is not None and name in hub.names else None
        connected = status is not None and status.state == "connected"
        if connected and status is not None:
            for tool_name in status.tools:
                tool = self.assistant.session.tools.get(tool_name)
                manual: Any = tool.manual if tool is not None else None
                if manual is None:
                    continue
                remote = getattr(manual, "extra_remote", tool_name)
                self.tools.appendRow(
                    _row(
                        remote,
                        str(manual.category),
                        _RISK_WORDS.get(str(manual.risk), str(manual.risk)),
                        getattr(manual, "why", ""),
                    )
                )
        for remote in config.deny_tools:
            self.tools.appendRow(_row(remote, "denied", "—", "You denied it in Settings."))
        count = len(status.tools) if connected and status is not None else 0
        if connected:
            self.tools_caption.setText(
                f"{name} offers {count} tool" + ("" if count == 1 else "s") + ":"
            )
        elif status is not None and status.state == "failed":
            self.tools_caption.setText(
                f"{name} could not connect: {status.last_error or 'no reason was given'}"
            )
        else:
            self.tools_caption.setText(
                f"{name}'s tools are listed here once it is connected."
                if not config.deny_tools
                else f"Tools of {name} you denied:"
            )
        failed = status is not None and status.state == "failed"
        self.tools_caption.setStyleSheet(
            f"color: {problem_color(self.palette()).name()};" if failed else ""
        )
        _fit(self.tools_view, self.tools.rowCount(), 1, 12)
        self.tools_view.setVisible(self.tools.rowCount() > 0)
        self.deny_button.setVisible(self.tools.rowCount() > 0)
        self.tools_panel.show()
        if chosen_tool is not None:
            self.select_tool(chosen_tool[0])
        self._update_deny_button()

    def _selected_tool(self) -> tuple[str, bool] | None:
        """The selected tool's own name, and whether it is denied now."""
        index = self.tools_view.currentIndex()
        if not index.isValid():
            return None
        name = self.tools.item(index.row(), 0)
        kind = self.tools.item(index.row(), 1)
        if name is None or kind is None:
            return None
        return name.text(), kind.text() == "denied"

    def _update_deny_button(self, *_: object) -> None:
        chosen = self._selected_tool()
        self.deny_button.setEnabled(chosen is not None)
        denied = chosen is not None and chosen[1]
        self.deny_button.setText("Allow this tool again" if denied else "Deny this tool")

    def select_tool(self, remote: str) -> None:
        for row in range(self.tools.rowCount()):
            item = self.tools.item(row, 0)
            if item is not None and item.text() == remote:
                self.tools_view.setCurrentIndex(self.tools.index(row, 0))
                return

    def tool_rows(self) -> list[tuple[str, ...]]:
        """What the tools table shows, row by row (tool, class, risk, why)."""
        rows = []
        for row in range(self.tools.rowCount()):
            cells = (self.tools.item(row, column) for column in range(4))
            rows.append(tuple(cell.text() if cell is not None else "" for cell in cells))
        return rows

    def say(self, text: str, *, problem: bool = False, good: bool = False) -> None:
        palette = self.palette()
        color = (
            problem_color(palette).name() if problem else good_color(palette).name() if good else ""
        )
        self.message.setStyleSheet(f"color: {color};" if color else "")
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # -- the editor --------------------------------------------------------------------------------

    def open_editor(self, name: str | None) -> None:
        """Show the form for server `name` (None: a new one)."""
        config = self.configured().get(name) if name is not None else None
        self._editing = name if config is not None else None
        self.editor_title.setText(f"Edit {name}" if config is not None else "New MCP server")
        self.name_edit.setText(name or "")
        self.command_edit.setText(
            shlex.join([config.command, *config.args])
            if config is not None and config.command is not None
            else ""
        )
        self.url_edit.setText(config.url or "" if config is not None else "")
        self.env_edit.setPlainText(
            "\n".join(f"{k}={v}" for k, v in config.env.items()) if config is not None else ""
        )
        category = config.default_category if config is not None else None
        self.category_box.setCurrentIndex(max(0, self.category_box.findData(category)))
        self.enabled_box.setChecked(config.enabled if config is not None else True)
        self.write_box.setChecked(config.write if config is not None else False)
        self.network_box.setChecked(config.network if config is not None else False)
        for field in self.fields.values():
            field.set_error(None)
        self.editor.show()
        self.name_edit.setFocus()
        QTimer.singleShot(0, self._reveal_editor)

    def _reveal_editor(self) -> None:
        """Scroll the Settings window so the whole form is in view."""
        parent = self.parentWidget()
        while parent is not None and not isinstance(parent, QScrollArea):
            parent = parent.parentWidget()
        if isinstance(parent, QScrollArea):
            parent.ensureWidgetVisible(self.editor, 0, 0)

    def close_editor(self) -> None:
        self.editor.hide()
        self._editing = None

    def _edited(self) -> tuple[str, dict[str, Any], dict[str, str]]:
        """(name, the server's settings as edited, errors of what no model checks: the
        command's quoting and the environment's lines)."""
        errors: dict[str, str] = {}
        name = self.name_edit.text().strip()
        old = self.configured().get(self._editing or "")
        # Keep what the form does not show (allowed and denied tools, classes, limits).
        data: dict[str, Any] = old.model_dump(exclude_defaults=True) if old is not None else {}
        data.pop("type", None)
        command_line = self.command_edit.text().strip()
        try:
            argv = shlex.split(command_line)
        except ValueError as exc:
            errors["command"] = f"The command has an unbalanced quote ({exc})."
            argv = []
        data["command"] = argv[0] if argv else None
        data["args"] = argv[1:]
        data["url"] = self.url_edit.text().strip() or None
        try:
            data["env"] = parse_env(self.env_edit.toPlainText())
        except ValueError as exc:
            errors["env"] = str(exc)
        data["enabled"] = self.enabled_box.isChecked()
        data["write"] = self.write_box.isChecked()
        data["network"] = self.network_box.isChecked()
        data["default_category"] = self.category_box.currentData()
        if not name:
            errors["name"] = "Give the server a name. " + _NAME_RULE
        elif name != self._editing and name in self.configured():
            errors["name"] = f"There is already a server called {name}."
        return name, data, errors

    async def save_server(self) -> bool:
        """Check the form; when it is valid, save the servers and reconnect them. False (and
        nothing saved) otherwise, each problem shown beside its field."""
        name, data, errors = self._edited()
        servers = {
            key: config.model_dump(exclude_defaults=True)
            for key, config in self.configured().items()
            if key != self._editing
        }
        servers[name] = data
        checked, model_errors = self._check(servers, name)
        for key, message in model_errors.items():
            errors.setdefault(key, message)  # the form's own message is the more precise one
        if checked is None or errors:
            self._show_errors(errors)
            return False
        errors = await self._save_checked(checked)
        if errors:
            self._show_errors(errors)
            return False
        self._show_errors({})
        self.close_editor()
        self.select(name)
        return True

    def _show_errors(self, errors: dict[str, str]) -> None:
        first: SettingField | None = None
        for key, field in self.fields.items():
            field.set_error(errors.get(key))
            if key in errors and first is None:
                first = field
        if first is not None:
            first.editor.setFocus()
        if errors:
            self.say(
                errors.get("status") or "The server was not saved: fix the fields marked in red.",
                problem=True,
            )

    async def save_servers(self, servers: dict[str, Any], name: str = "") -> dict[str, str]:
        """Save `servers` as `mcp.servers` (nothing else changes) and apply them; {} when it
        was saved, else the model's errors by editor field ("status" for the rest)."""
        checked, errors = self._check(servers, name)
        if checked is None:
            return errors
        return await self._save_checked(checked)

    def _check(self, servers: dict[str, Any], name: str) -> tuple[Settings | None, dict[str, str]]:
        """The saved settings with `servers` as `mcp.servers`, checked by the settings model."""
        data = self.settings.model_dump()
        data["mcp"] = {"servers": servers}
        try:
            return Settings.model_validate(data), {}
        except ValidationError as exc:
            return None, self._errors_of(exc, name)

    async def _save_checked(self, checked: Settings) -> dict[str, str]:
        home = self.assistant.session.home
        try:
            await self.assistant.run_io(save_settings, home, checked)
        except OSError as exc:
            return {
                "status": f"The servers could not be saved ({exc.strerror or exc}); nothing "
                f"changed. Check that {home} is writable."
            }
        except SettingsError as exc:
            return {"status": f"{user_message(exc, FrontEnd.APP)}."}
        # What the Settings window saves next includes these servers, whether or not they are
        # connected yet.
        self.settings.mcp = checked.mcp
        if self.assistant.busy:
            self._apply_after_turn = True
            self.say("Saved. The MCP servers reconnect when the current request has finished.")
        else:
            self.say("Saved. Connecting…" if checked.mcp.servers else "Saved.")
            await self.assistant.use_mcp(checked.mcp)
            self.say("Saved.")
        self.refresh()
        return {}

    def _errors_of(self, exc: ValidationError, name: str) -> dict[str, str]:
        errors: dict[str, str] = {}
        for error in exc.errors():
            loc = [str(part) for part in error["loc"]]
            if loc[:2] != ["mcp", "servers"]:
                errors.setdefault("status", _plain(str(error["msg"])))
                continue
            rest = loc[3:]
            if rest == ["[key]"]:
                message = (
                    _NAME_RULE
                    if error["type"] == "string_pattern_mismatch"
                    else _plain(str(error["msg"]))
                )
                errors.setdefault("name", message)
            elif loc[2] != name:
                errors.setdefault("status", f"Server {loc[2]}: {_plain(str(error['msg']))}")
            else:
                field = _FIELD_OF.get(rest[0] if rest else "", "command" if not rest else "status")
                errors.setdefault(field, _plain(str(error["msg"])))
        return errors

    def _on_turn_event(self, event: TurnEvent) -> None:
        if isinstance(event, TurnEnded) and self._apply_after_turn:
            self._apply_after_turn = False
            spawn(self._apply_saved())

    async def _apply_saved(self) -> None:
        await self.assistant.use_mcp(self.settings.mcp)
        self.say("The saved MCP servers are connecting.")

    # -- removing, testing, denying --------------------------------------------------------------

    async def remove_selected(self, *, ask: bool = True) -> bool:
        name = self.selected()
        if name is None:
            return False
        if ask and not await confirm(
            self,
            "Remove MCP server",
            f"Remove the MCP server {name}? Its tools will no longer be offered.",
            "Remove",
        ):
            return False
        servers = {
            key: config.model_dump(exclude_defaults=True)
            for key, config in self.configured().items()
            if key != name
        }
        if self._editing == name:
            self.close_editor()
        errors = await self.save_servers(servers)
        if errors:
            self.say(next(iter(errors.values())), problem=True)
            return False
        self.say(f"Removed {name}.")
        return True

    async def test_selected(self) -> str:
        """Connect the selected server again (off the UI thread) and say how it went."""
        name = self.selected()
        hub = self.assistant.session.mcp
        if name is None:
            return ""
        if hub is None or name not in hub.names:
            self.say(f"{name} is not saved yet.", problem=True)
            return ""
        if not self.configured()[name].enabled:
            self.say(f"{name} is off: edit it and tick “Connect to this server” first.")
            return ""
        self.test_button.setEnabled(False)
        self.say(f"Connecting to {name}…")
        try:
            status = await self.assistant.run_mcp(hub.test, name)
        finally:
            self.test_button.setEnabled(self.selected() is not None)
        summary = status.summary()
        if status.state == "connected" and status.server_info:
            summary += f" ({status.server_info})"
        self.say(
            f"{name}: {summary}", good=status.state == "connected", problem=status.state == "failed"
        )
        self.refresh()
        return summary

    async def toggle_selected_tool(self) -> bool:
        """Deny the selected tool (or allow a denied one again): saved, then reconnected."""
        chosen = self._selected_tool()
        name = self.selected()
        if chosen is None or name is None:
            return False
        remote, denied = chosen
        config = self.configured()[name]
        data = config.model_dump(exclude_defaults=True)
        deny: Sequence[str] = config.deny_tools
        if denied:
            data["deny_tools"] = [tool for tool in deny if tool != remote]
        else:
            data["deny_tools"] = [*deny, remote]
            if config.allow_tools is not None:
                data["allow_tools"] = [tool for tool in config.allow_tools if tool != remote]
        servers = {key: c.model_dump(exclude_defaults=True) for key, c in self.configured().items()}
        servers[name] = data
        errors = await self.save_servers(servers, name)
        if errors:
            self.say(next(iter(errors.values())), problem=True)
            return False
        self.say(
            f"{remote} is offered again." if denied else f"{remote} is denied: never offered.",
        )
        return True
