"""The tray icon and its menu: where Chamberlain lives while it runs.

The icon shows what the assistant is doing — idle, thinking, asking for permission (it flashes
while a question waits), using a tool (one glyph per kind of capability), paused — from SVG
files that the icon engine renders sharp at any size. The menu opens the windows, pauses the
assistant, revokes every permission and quits; quitting is only ever done from here.

It renders the QtSession's state and forwards the person's choices; it decides nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from importlib import resources

from PySide6.QtCore import QObject, Qt, QTimer, Signal, SignalInstance
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from app.qt_session import ASKING, PAUSED, THINKING, TOOL, QtSession

log = logging.getLogger("chamberlain.app.tray")

FLASH_MS = 450

# The glyph a tool's capability shows while it runs.
_TOOL_ICONS = {
    "file_read": "tool-files",
    "file_write": "tool-files",
    "open_external": "tool-files",
    "system_execute": "tool-command",
    "system_read": "tool-system",
    "screen_read": "tool-screen",
    "web_access": "tool-web",
    "mcp_read": "tool-system",
    "mcp_write": "tool-system",
    "mcp_execute": "tool-command",
}

# What the tooltip says Chamberlain is doing while a tool of each capability runs.
_TOOL_TIPS = {
    "file_read": "reading files",
    "file_write": "changing files",
    "open_external": "opening something in another app",
    "system_execute": "running a command",
    "system_read": "looking up system information",
    "screen_read": "looking at your screen",
    "web_access": "using the web",
    "memory_write": "remembering something",
    "mcp_read": "using an MCP tool",
    "mcp_write": "using an MCP tool",
    "mcp_execute": "using an MCP tool",
}

_STATE_TIPS = {
    "idle": "Chamberlain — ready",
    THINKING: "Chamberlain — working on your request",
    ASKING: "Chamberlain — waiting for your permission",
    PAUSED: "Chamberlain — paused",
}


def icon(name: str) -> QIcon:
    """One of the bundled SVG icons (resources/icons/NAME.svg)."""
    path = resources.files("resources") / "icons" / f"{name}.svg"
    return QIcon(str(path))


def icon_for(state: str, detail: str = "") -> QIcon:
    if state == TOOL:
        return icon(_TOOL_ICONS.get(detail, "tool-system"))
    return icon(state if state in ("idle", THINKING, ASKING, PAUSED) else "idle")


class Tray(QObject):
    """The tray icon, its menu and its notifications."""

    open_chat = Signal()
    open_permissions = Signal()
    open_memory = Signal()
    open_activity = Signal()
    open_settings = Signal()
    open_about = Signal()
    open_welcome = Signal()
    revoke_all = Signal()
    quit_requested = Signal()

    def __init__(self, assistant: QtSession, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.assistant = assistant
        # The icon itself is made on the first `show`: on a D-Bus tray (StatusNotifierItem,
        # Wayland's only kind) Qt decides once per process, when the first icon is made,
        # whether there is a tray host; made before a host that starts later, it would never
        # reach one.
        self._icon: QSystemTrayIcon | None = None
        self._tip = _STATE_TIPS["idle"]
        self.menu = QMenu("&Chamberlain")
        self.menu.setAccessibleName("Chamberlain menu")
        self.actions: dict[str, QAction] = {}
        self._add("chat", "Open &chat", self.open_chat)
        # Ticked while paused; its text never flips ("Resume" ticked would read as resumed).
        self.pause = self._add("pause", "&Pause assistant", None)
        self.pause.setCheckable(True)
        self.pause.toggled.connect(self._pause_toggled)
        self._add("revoke", "&Revoke all permissions", self.revoke_all)
        self.menu.addSeparator()
        self._add("permissions", "P&ermissions…", self.open_permissions)
        self._add("memory", "&Memory…", self.open_memory)
        self._add("activity", "&Activity…", self.open_activity)
        self._add("settings", "&Settings…", self.open_settings)
        self._add("about", "A&bout Chamberlain", self.open_about)
        self._add("welcome", "&Welcome…", self.open_welcome)
        self.menu.addSeparator()
        self._add("quit", "&Quit Chamberlain", self.quit_requested)
        # What clicking the notification on show does (opening the window it is about).
        self._on_click: Callable[[], None] | None = None

        self._state = ("idle", "")
        self._waiting = 0
        self._flash_on = False
        self._flash = QTimer(self)
        self._flash.setInterval(FLASH_MS)
        self._flash.timeout.connect(self._toggle_flash)
        assistant.state_changed.connect(self.show_state)

    def show_shortcut(self, shortcut: str) -> None:
        """Show the desktop-wide key that opens the chat beside "Open chat" ("" for none). Shown
        only: the key itself is taken from the desktop (app/global_shortcut.py), and a menu's
        own shortcut would act only while the menu is open."""
        chat = self.actions["chat"]
        chat.setShortcut(QKeySequence(shortcut))
        chat.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        chat.setShortcutVisibleInContextMenu(True)

    def _add(self, key: str, text: str, signal: SignalInstance | None) -> QAction:
        action = QAction(text, self.menu)
        if signal is not None:
            action.triggered.connect(signal.emit)
        self.menu.addAction(action)
        self.actions[key] = action
        return action

    @property
    def icon(self) -> QSystemTrayIcon:
        """The tray icon, made (hidden) the first time it is needed."""
        if self._icon is None:
            made = QSystemTrayIcon(self._current_icon(), self)
            made.setToolTip(self._tip)
            made.setContextMenu(self.menu)
            made.activated.connect(self._activated)
            made.messageClicked.connect(self.notification_clicked)
            self._icon = made
        return self._icon

    def _current_icon(self) -> QIcon:
        return icon(ASKING) if self._flash_on else icon_for(*self._state)

    # -- state -----------------------------------------------------------------------------------

    @staticmethod
    def available(host_found: bool | None = None) -> bool:
        """Whether the desktop has a system tray to live in now (GNOME without AppIndicator, a
        bare X server and a Wayland compositor with no StatusNotifier host have none). Asked
        again while there is none: a tray host often starts after the apps at login.
        `host_found`: `status_notifier_host()` already asked (off the UI thread)."""
        from PySide6.QtGui import QGuiApplication

        # On Wayland, not Qt's own check first: it would settle "no tray" for good.
        wayland = QGuiApplication.platformName() == "wayland"
        if wayland and not (status_notifier_host() if host_found is None else host_found):
            return False
        return QSystemTrayIcon.isSystemTrayAvailable()

    def show(self) -> None:
        self.icon.show()

    def hide(self) -> None:
        if self._icon is not None:
            self._icon.hide()

    @property
    def shown(self) -> bool:
        return self._icon is not None and self._icon.isVisible()

    @property
    def shown_state(self) -> tuple[str, str]:
        return self._state

    def show_state(self, state: str, detail: str = "") -> None:
        self._state = (state, detail)
        if not self._flash.isActive() and self._icon is not None:
            self._icon.setIcon(icon_for(state, detail))
        tip = _STATE_TIPS.get(state)
        if state == TOOL:
            tip = f"Chamberlain — {_TOOL_TIPS.get(detail, 'using a tool')}"
        self._tip = tip or _STATE_TIPS["idle"]
        if self._icon is not None:
            self._icon.setToolTip(self._tip)
        self.pause.blockSignals(True)
        self.pause.setChecked(state == PAUSED)
        self.pause.blockSignals(False)

    def set_waiting(self, count: int) -> None:
        """Flash while `count` permission questions wait for an answer."""
        self._waiting = count
        if count and not self._flash.isActive():
            self._flash.start()
        elif not count and self._flash.isActive():
            self._flash.stop()
            self._flash_on = False
            if self._icon is not None:
                self._icon.setIcon(icon_for(*self._state))

    @property
    def flashing(self) -> bool:
        return self._flash.isActive()

    def _toggle_flash(self) -> None:
        self._flash_on = not self._flash_on
        if self._icon is not None:
            self._icon.setIcon(self._current_icon())

    def notify(self, title: str, text: str, clicked: Callable[[], None] | None = None) -> None:
        """A desktop notification, where the tray can show one; clicking it runs `clicked`
        (a newer notification replaces the older one, and what its click does)."""
        self._on_click = clicked
        if self._icon is not None and self._icon.isVisible() and QSystemTrayIcon.supportsMessages():
            self._icon.showMessage(title, text, icon("idle"), 8000)
        else:
            # No tray to show it: the desktop's notification service, where there is one.
            from app import notifications

            notifications.send_soon(title, text)

    def notification_clicked(self) -> None:
        """The person clicked the notification: open what it is about (once)."""
        clicked, self._on_click = self._on_click, None
        if clicked is not None:
            clicked()

    # -- the person's choices --------------------------------------------------------------------

    def _pause_toggled(self, paused: bool) -> None:
        self.assistant.set_paused(paused)

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (
            QSystemTrayIcon.ActivationReason.Trigger,
            QSystemTrayIcon.ActivationReason.DoubleClick,
        ):
            self.open_chat.emit()


STATUS_NOTIFIER_WATCHER = "org.kde.StatusNotifierWatcher"


def status_notifier_host(environ: Mapping[str, str] | None = None, timeout_s: float = 1.0) -> bool:
    """Whether a StatusNotifierItem tray host (waybar, swaybar, KDE's panel, GNOME's AppIndicator
    extension) is registered on the session bus: the tray Wayland desktops have. Blocking for at
    most about twice `timeout_s` (a bus that does not answer is no tray): call it off the UI
    thread where it repeats (`DesktopApp._look_for_tray`)."""
    from jeepney import DBusAddress, MessageType, Properties, message_bus, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    from tools.wayland import session_bus_address

    address = session_bus_address(os.environ if environ is None else environ)
    if address is None:
        return False
    try:
        with open_dbus_connection(bus=address) as conn:
            owned = conn.send_and_get_reply(
                new_method_call(message_bus, "NameHasOwner", "s", (STATUS_NOTIFIER_WATCHER,)),
                timeout=timeout_s,
            )
            if owned.header.message_type is MessageType.error or not owned.body[0]:
                return False
            watcher = DBusAddress(
                "/StatusNotifierWatcher",
                bus_name=STATUS_NOTIFIER_WATCHER,
                interface=STATUS_NOTIFIER_WATCHER,
            )
            host = conn.send_and_get_reply(
                Properties(watcher).get("IsStatusNotifierHostRegistered"), timeout=timeout_s
            )
    except (OSError, ValueError, TimeoutError):
        return False
    if host.header.message_type is MessageType.error:
        return False
    return bool(host.body[0][1])
