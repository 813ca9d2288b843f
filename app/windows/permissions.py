"""The Permissions window: what Chamberlain may do right now, for how long, and what it was
refused lately.

Three lists: the live grants (once, timed, session) with the time each has left, counting down
every second; the "always" rules with when each was last used; the recent denials and
timeouts. A grant is revoked from here (the selected one, or all after a confirmation) through
the QtSession, which audits it; the next request then asks again.

It renders what the broker reports and forwards the person's choices. Grants and the audit log
are read on the QtSession's io thread; the countdown only re-renders the labels from the expiry
times it already has, and never re-reads storage.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
)
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.activity_words import DenialRow, last_uses, recent_denials
from app.qt_session import QtSession
from app.windows.confirm import confirm
from app.windows.palette import problem_color
from app.windows.placement import resize_to_fit
from app.windows.tables import EmptyOr, caption, table
from app.windows.tasks import Coalesced, spawn
from app.windows.words import capability_words, duration, span, tool_words, when
from broker.events import TurnEnded, TurnEvent
from broker.session import Session
from broker.types import Grant, GrantMode
from tools.escapes import visible
from tools.manual import Capability
from tools.scopes import describe_scope

log = logging.getLogger("chamberlain.app.windows.permissions")

TICK_MS = 1000
DENIALS_SHOWN = 20

_MODE_WORDS = {
    GrantMode.ONCE: "Once",
    GrantMode.TIMED: "For a set time",  # only when the grant does not say how long
    GrantMode.SESSION: "Until Chamberlain quits",
    GrantMode.ALWAYS: "Always",
}


def mode_words(grant: Grant) -> str:
    """How long the grant was given for, as the person chose it: "For 5 minutes", "Once"…"""
    if grant.mode is GrantMode.TIMED and grant.expires_at is not None:
        return f"For {span(grant.expires_at - grant.issued_at)}"
    return _MODE_WORDS.get(grant.mode, grant.mode.value)


Index = QModelIndex | QPersistentModelIndex


def scope_words(capability: str, scope: str) -> str:
    """What a grant covers, in words, with control, bidi and zero-width characters shown
    escaped: `report\u202efdp.sh` never reads as `reporths.pdf` here either."""
    try:
        return describe_scope(Capability(capability), scope)
    except ValueError:  # a capability this version does not know (an old log line)
        return visible(scope)


def time_left(grant: Grant, now: float) -> str:
    """What is left of a grant's lease, in words."""
    if grant.expires_at is None:
        return "until Chamberlain quits" if grant.mode is GrantMode.SESSION else "until revoked"
    left = grant.expires_at - now
    return duration(left) if left > 0 else "ended"


@dataclass(frozen=True)
class PermissionsView:
    """Everything the window shows, read in one go on the io thread."""

    grants: list[Grant]
    last_used: dict[str, float]
    denials: list[DenialRow]


def read_permissions(session: Session) -> PermissionsView:
    """Runs on the io thread: the live grants, when each was last used, the recent denials."""
    path = session.audit.path
    grants = sorted(session.permissions.grants.live(), key=lambda g: g.issued_at, reverse=True)
    return PermissionsView(grants, last_uses(path), recent_denials(path, DENIALS_SHOWN))


class GrantsModel(QAbstractTableModel):
    """Grants as rows. `now` moves with the countdown; only the time-left column changes."""

    def __init__(
        self, headers: list[str], *, countdown: bool, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._headers = headers
        self._countdown = countdown
        self.grants: list[Grant] = []
        self.last_used: dict[str, float] = {}
        self.now = 0.0

    def set_grants(self, grants: list[Grant], last_used: dict[str, float], now: float) -> None:
        self.beginResetModel()
        self.grants, self.last_used, self.now = grants, last_used, now
        self.endResetModel()

    def tick(self, now: float) -> None:
        self.now = now
        if self.grants and self._countdown:
            column = len(self._headers) - 1
            self.dataChanged.emit(
                self.index(0, column),
                self.index(len(self.grants) - 1, column),
                [Qt.ItemDataRole.DisplayRole],
            )

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.grants)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._headers)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation is Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self._headers[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        grant = self.grants[index.row()]
        if role == Qt.ItemDataRole.UserRole:
            return grant.id
        if role == Qt.ItemDataRole.ToolTipRole:
            return (
                f"{capability_words(grant.capability)}: "
                f"{visible(grant.scope, lines=True)} ({visible(grant.id)})"
            )
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        column = index.column()
        if column == 0:
            return capability_words(grant.capability)
        if column == 1:
            return scope_words(grant.capability, grant.scope)
        if column == 2:
            return mode_words(grant)
        if self._countdown:
            return time_left(grant, self.now)
        return when(self.last_used.get(grant.id)) if grant.id in self.last_used else "not yet"


class DenialsModel(QAbstractTableModel):
    HEADERS = ("When", "What", "Where", "Tool", "Why")

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.denials: list[DenialRow] = []

    def set_denials(self, denials: list[DenialRow]) -> None:
        self.beginResetModel()
        self.denials = denials
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.denials)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation is Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or role not in (
            Qt.ItemDataRole.DisplayRole,
            Qt.ItemDataRole.ToolTipRole,
        ):
            return None
        row = self.denials[index.row()]
        what = capability_words(row.capability) if row.capability else "—"
        where = scope_words(row.capability, row.scope) if row.scope else "—"
        if row.event == "PERMISSION_TIMEOUT":
            kind = "Timed out"
        elif row.event == "TOKEN_REFUSED":
            kind = "Call refused"
        else:
            kind = "Denied"
        tool = visible(tool_words(row.tool)) if row.tool else "—"
        values = (when(row.time), what, where, tool, f"{kind}: {visible(row.why)}")
        return values[index.column()]


def _heading(text: str) -> QLabel:
    label = QLabel(f"<b>{text}</b>")
    label.setAccessibleName(text)
    return label


class PermissionsWindow(QWidget):
    """Live grants with their time left, always-rules with their last use, recent denials."""

    def __init__(self, assistant: QtSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.assistant = assistant
        self.setWindowTitle("Permissions")  # Qt adds " — Chamberlain" (words.py)
        self.setAccessibleName("Permissions")
        resize_to_fit(self, 860, 620)  # at most what the screen holds
        self._reload = Coalesced(self._load)

        # Owned by the window, so Qt deletes them with it, on the UI thread.
        self.live_model = GrantsModel(
            ["What", "Where", "How long", "Time left"], countdown=True, parent=self
        )
        self.rules_model = GrantsModel(
            ["What", "Where", "How long", "Last used"], countdown=False, parent=self
        )
        self.denials_model = DenialsModel(self)

        paths = Qt.TextElideMode.ElideMiddle
        self.live_view = table(
            self.live_model,
            "Active permissions",
            "What Chamberlain may do now, and for how long",
            paths,
        )
        self.rules_view = table(
            self.rules_model, "Always allowed", "Rules that last until you revoke them", paths
        )
        self.denials_view = table(
            self.denials_model,
            "Recently refused",
            "Permissions denied or not answered in time",
            paths,
        )
        for view, widths in (
            (self.live_view, (190, 360, 150)),
            (self.rules_view, (190, 360, 150)),
            (self.denials_view, (130, 190, 200, 210)),
        ):
            for column, width in enumerate(widths):
                view.setColumnWidth(column, width)

        self.live = EmptyOr(
            self.live_view,
            "Nothing is allowed right now. When you allow something once, for a set time or "
            "until Chamberlain quits, it appears here with the time it has left.",
        )
        self.rules = EmptyOr(
            self.rules_view,
            "No rules. When you answer a question with “Always”, the rule appears here with "
            "when it was last used.",
        )
        self.denials = EmptyOr(
            self.denials_view,
            "Nothing was refused lately. Permissions you deny, and questions nobody answered "
            "in time, appear here.",
        )

        self.revoke_button = QPushButton("&Revoke")
        self.revoke_button.setAccessibleName("Revoke the selected permission")
        self.revoke_button.setToolTip("Revoke the selected permission (Delete)")
        self.revoke_rule_button = QPushButton("Re&move rule")
        self.revoke_rule_button.setAccessibleName("Remove the selected always rule")
        self.revoke_rule_button.setToolTip("Remove the selected rule (Delete)")
        self.revoke_all_button = QPushButton("Revoke &all…")
        self.revoke_all_button.setAccessibleName("Revoke every permission")
        self.refresh_button = QPushButton("Re&fresh")
        self.refresh_button.setAccessibleName("Refresh the lists")
        self.refresh_button.setToolTip("Read the permissions again (F5)")
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # may quote what a model or file wrote
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Status")

        layout = QVBoxLayout(self)
        layout.addWidget(_heading("Allowed now"))
        layout.addWidget(caption("What Chamberlain may do without asking, until each ends."))
        layout.addWidget(self.live, 3)
        row = QHBoxLayout()
        row.addWidget(self.revoke_button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(_heading("Always allowed"))
        layout.addWidget(caption("Rules that last until you remove them, even after a restart."))
        layout.addWidget(self.rules, 2)
        row = QHBoxLayout()
        row.addWidget(self.revoke_rule_button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(_heading("Recently refused"))
        layout.addWidget(caption("What you denied, and questions nobody answered in time."))
        layout.addWidget(self.denials, 2)
        layout.addWidget(self.status)
        row = QHBoxLayout()
        row.addWidget(self.refresh_button)
        row.addStretch(1)
        row.addWidget(self.revoke_all_button)
        layout.addLayout(row)

        self.revoke_button.clicked.connect(lambda: self._revoke_selected(self.live_view))
        self.revoke_rule_button.clicked.connect(lambda: self._revoke_selected(self.rules_view))
        self.revoke_all_button.clicked.connect(lambda: spawn(self.revoke_all()))
        self.refresh_button.clicked.connect(self.request_refresh)
        for view in (self.live_view, self.rules_view):
            shortcut = QShortcut(QKeySequence(QKeySequence.StandardKey.Delete), view)
            shortcut.setContext(Qt.ShortcutContext.WidgetShortcut)
            shortcut.activated.connect(lambda v=view: self._revoke_selected(v))
            view.selectionModel().selectionChanged.connect(self._update_buttons)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Refresh), self, self.request_refresh)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Close), self, self.close)

        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self.tick)

        assistant.grants_changed.connect(self.request_refresh)
        assistant.turn_event.connect(self._on_turn_event)
        self._update_buttons()

    # -- reading ---------------------------------------------------------------------------------

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self._timer.start()
        self.request_refresh()

    def hideEvent(self, event: Any) -> None:
        super().hideEvent(event)
        self._timer.stop()  # nothing to count down for nobody

    def request_refresh(self) -> None:
        spawn(self.refresh())

    def _on_turn_event(self, event: TurnEvent) -> None:
        if isinstance(event, TurnEnded):
            self.request_refresh()

    async def refresh(self) -> None:
        """Read grants and the log again (on the io thread) and show them. A refresh asked for
        while one runs is done once more after it, not in parallel."""
        await self._reload()

    async def _load(self) -> None:
        session = self.assistant.session
        try:
            view = await self.assistant.run_io(read_permissions, session)
        except OSError as exc:
            self._say(f"The permissions could not be read: {exc.strerror or exc}.", True)
            return
        now = session.clock.now()
        live = [g for g in view.grants if g.mode is not GrantMode.ALWAYS]
        rules = [g for g in view.grants if g.mode is GrantMode.ALWAYS]
        self.live_model.set_grants(live, view.last_used, now)
        self.rules_model.set_grants(rules, view.last_used, now)
        self.denials_model.set_denials(view.denials)
        self._update_buttons()

    def tick(self) -> None:
        """Count down: re-render the time left from the expiry times already read. A grant that
        has just ended is dropped by one refresh."""
        now = self.assistant.session.clock.now()
        ended_before = any(
            g.expires_at is not None and g.expires_at <= self.live_model.now
            for g in self.live_model.grants
        )
        self.live_model.tick(now)
        ended = any(
            g.expires_at is not None and g.expires_at <= now for g in self.live_model.grants
        )
        if ended and not ended_before:
            self.request_refresh()

    # -- revoking --------------------------------------------------------------------------------

    def _selected(self, view: QTableView) -> str | None:
        rows = view.selectionModel().selectedRows()
        if not rows:
            return None
        grant_id = rows[0].data(Qt.ItemDataRole.UserRole)
        return grant_id if isinstance(grant_id, str) else None

    def _update_buttons(self, *_: object) -> None:
        self.revoke_button.setEnabled(self._selected(self.live_view) is not None)
        self.revoke_rule_button.setEnabled(self._selected(self.rules_view) is not None)
        self.revoke_all_button.setEnabled(bool(self.live_model.grants or self.rules_model.grants))

    def _revoke_selected(self, view: QTableView) -> None:
        grant_id = self._selected(view)
        if grant_id is not None:
            spawn(self.revoke(grant_id))

    async def revoke(self, grant_id: str) -> None:
        grant = next(
            (g for g in self.live_model.grants + self.rules_model.grants if g.id == grant_id), None
        )
        what = (
            f"{capability_words(grant.capability)} ({scope_words(grant.capability, grant.scope)})"
            if grant is not None
            else "The permission"
        )
        try:
            found = await self.assistant.revoke(grant_id)
        except OSError as exc:
            self._say(f"{what} could not be revoked: {exc.strerror or exc}.", True)
            return
        if found:
            self._say(f"Revoked: {what}. Chamberlain will ask again next time.")
        else:
            self._say(f"{what} had already ended.")

    async def revoke_all(self) -> None:
        count = len(self.live_model.grants) + len(self.rules_model.grants)
        if not count:
            return
        plural = "s" if count != 1 else ""
        if not await confirm(
            self,
            "Revoke every permission?",
            f"Revoke all {count} permission{plural}, the “Always” rules included? Chamberlain "
            "will ask again before it next needs any of them.",
            "Revoke all",
        ):
            return
        try:
            revoked = await self.assistant.revoke_all()
        except OSError as exc:
            self._say(f"The permissions could not be revoked: {exc.strerror or exc}.", True)
            return
        plural = "s" if revoked != 1 else ""
        self._say(f"Revoked {revoked} permission{plural}. Chamberlain will ask again next time.")

    def _say(self, text: str, problem: bool = False) -> None:
        self.status.setText(text)
        self.status.setAccessibleDescription(text)
        color = problem_color(self.palette()).name() if problem else ""
        self.status.setStyleSheet(f"color: {color};" if color else "")
