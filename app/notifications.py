"""Desktop notifications without a tray: the freedesktop Notifications service on the session bus
(mako, dunst, GNOME Shell, KDE's Plasma all serve it), over jeepney.

Qt shows notifications only through a tray icon; on a desktop with no tray (GNOME without the
AppIndicator extension, a Wayland compositor with no StatusNotifier host) a notification would
otherwise only be logged — the memory-consent question or "Chamberlain finished your request"
unseen. Sent from a thread of its own: a bus that is slow to answer never holds the UI.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping

from tools.wayland import session_bus_address

log = logging.getLogger("chamberlain.app.notifications")

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
# How long the notification stays (ms), as the tray's own do.
SHOW_MS = 8000
MAX_TEXT = 500


def send(title: str, text: str, environ: Mapping[str, str] | None = None) -> int | None:
    """Show one notification now; its id, or None where no service shows it (said in the log).
    Blocking: call `send_soon` from the UI thread."""
    from jeepney import DBusAddress, MessageType, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    address = session_bus_address(os.environ if environ is None else environ)
    if address is None:
        log.info("no session bus for a notification: %s — %s", title, text)
        return None
    target = DBusAddress(PATH, bus_name=SERVICE, interface=SERVICE)
    body: tuple[object, ...] = (
        "Chamberlain", 0, "chamberlain", title[:MAX_TEXT], text[:MAX_TEXT], [],
        {"desktop-entry": ("s", "chamberlain"), "urgency": ("y", 1)}, SHOW_MS,
    )  # fmt: skip
    try:
        with open_dbus_connection(bus=address) as conn:
            reply = conn.send_and_get_reply(
                new_method_call(target, "Notify", "susssasa{sv}i", body), timeout=5
            )
    except (OSError, ValueError, TimeoutError) as exc:
        log.info("the notification could not be sent (%s): %s — %s", exc, title, text)
        return None
    if reply.header.message_type is MessageType.error:
        log.info("no notification service shows it (%s): %s — %s", reply.body, title, text)
        return None
    return int(reply.body[0])


def send_soon(title: str, text: str) -> None:
    """`send` on a thread of its own, so the UI never waits for the bus."""
    threading.Thread(target=send, args=(title, text), name="notification", daemon=True).start()
