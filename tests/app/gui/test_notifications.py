"""app/notifications.py: a notification with no tray to show it reaches the desktop's
notification service over a real session bus (a private dbus-daemon), served here by a small
Notifications service on that bus that records what it is sent."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app import notifications

DBUS_DAEMON = shutil.which("dbus-daemon")


@pytest.fixture
def bus(tmp_path: Path) -> Iterator[str]:
    if DBUS_DAEMON is None:
        pytest.skip("dbus-daemon is not installed (scripts/setup.sh --test installs it)")
    address = f"unix:path={tmp_path / 'bus'}"
    daemon = subprocess.Popen(
        [DBUS_DAEMON, "--session", "--nofork", f"--address={address}", "--print-address"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert daemon.stdout is not None
    daemon.stdout.readline()  # it prints its address once it listens
    try:
        yield address
    finally:
        daemon.terminate()
        daemon.wait(10)


class Service:
    """org.freedesktop.Notifications on `address`, answering Notify with ids from 41 up."""

    def __init__(self, address: str) -> None:
        from jeepney import message_bus
        from jeepney.io.blocking import Proxy, open_dbus_connection

        self.conn = open_dbus_connection(bus=address)
        Proxy(message_bus, self.conn).RequestName(notifications.SERVICE)
        self.seen: list[tuple[Any, ...]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        from jeepney import MessageType, new_method_return

        while not self.stop.is_set():
            try:
                msg = self.conn.receive(timeout=0.1)
            except TimeoutError:
                continue
            if msg.header.message_type is MessageType.method_call:
                self.seen.append(tuple(msg.body))
                self.conn.send(new_method_return(msg, "u", (41 + len(self.seen) - 1,)))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.conn.close()


def test_a_notification_reaches_the_desktops_service(bus: str) -> None:
    service = Service(bus)
    try:
        shown = notifications.send(
            "Chamberlain wants to remember something", "You said: I'm allergic to penicillin",
            {"DBUS_SESSION_BUS_ADDRESS": bus},
        )  # fmt: skip
    finally:
        service.close()
    assert shown == 41
    (call,) = service.seen
    app, replaces, icon, title, text, actions, hints, timeout = call
    assert (app, replaces, icon) == ("Chamberlain", 0, "chamberlain")
    assert (title, text) == ("Chamberlain wants to remember something",
                             "You said: I'm allergic to penicillin")  # fmt: skip
    assert actions == []
    assert hints["desktop-entry"] == ("s", "chamberlain")
    assert timeout == notifications.SHOW_MS


def test_no_service_or_no_bus_is_said_in_the_log_and_nothing_fails(
    bus: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="chamberlain.app.notifications")
    assert notifications.send("Title", "text", {"DBUS_SESSION_BUS_ADDRESS": bus}) is None
    assert notifications.send("Title", "text", {}) is None
    said = caplog.text
    assert "no notification service shows it" in said
    assert "no session bus for a notification: Title — text" in said


def test_the_tray_with_no_icon_sends_it_to_the_service(
    bus: str, qapp: Any, app_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.qt_session import QtSession
    from app.tray import Tray
    from tests.app.gui.conftest import make_session

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus)
    assistant = QtSession(make_session(app_home))
    service = Service(bus)
    try:
        tray = Tray(assistant)  # never shown: there is no tray icon to show it
        tray.notify("Permissions revoked", "3 permissions revoked.")
        for _ in range(100):
            if service.seen:
                break
            threading.Event().wait(0.05)
    finally:
        service.close()
        assistant.close()
    assert not tray.shown
    assert [call[3:5] for call in service.seen] == [
        ("Permissions revoked", "3 permissions revoked.")
    ]
