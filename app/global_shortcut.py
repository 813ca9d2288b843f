"""The key that opens the chat from anywhere on the desktop, whichever window has the focus.

Qt has no desktop-wide shortcut, so on X11 the key is taken from the X server itself: a
python-xlib connection of our own grabs it on the root window (XGrabKey) and a background thread
waits for its presses, which reach the UI thread as the `pressed` signal (queued, as every signal
from another thread is). The grab is made for each combination of Num Lock and Caps Lock too, or
the key would do nothing while either is on.

Where the key cannot be taken, the reason is kept in `problem`, in words for Settings: another
program holds it (X11 gives a key to one client only), or the desktop does not let programs take
keys at all (Wayland: there the desktop's own keyboard settings bind `chamberlain --chat`, which
brings up the chat of the running app).

This module must never take a key without modifiers (it would steal what the person types), never
keep a grab after `stop()`, and never block the UI thread: the thread only reads events.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Mapping, Sequence

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QKeySequence

from broker.settings import check_shortcut

log = logging.getLogger("chamberlain.app.global_shortcut")

# What Settings says where the desktop lets no program take a key.
BIND_IT_YOURSELF = (
    "This desktop does not let programs take a key of their own; in your desktop's keyboard "
    "settings, bind the key you want to the command `chamberlain --chat`."
)


def taken_words(shortcut: str) -> str:
    return (
        f"{shortcut} is already used by another program, so it does not open the chat. Choose "
        "another key, or free it in the program that uses it."
    )


def x11_key(shortcut: str) -> tuple[int, int] | None:
    """(X keysym, X modifier mask) of a shortcut such as "Ctrl+Alt+Space"; None when it is not
    one (check_shortcut's rules) or names a key X does not know."""
    from Xlib import XK, X

    try:
        shortcut = check_shortcut(shortcut)
    except ValueError:
        return None
    if not shortcut:
        return None
    if shortcut.endswith("++"):
        modifiers, key = shortcut[:-2].split("+"), "+"
    else:
        *modifiers, key = shortcut.split("+")
    masks = {"Ctrl": X.ControlMask, "Alt": X.Mod1Mask, "Shift": X.ShiftMask, "Meta": X.Mod4Mask}
    mask = 0
    for modifier in modifiers:
        mask |= masks[modifier]
    if len(key) == 1:
        # A Latin-1 character's keysym is its code point (the unshifted, lower-case one).
        return (ord(key.lower()), mask) if ord(key) < 0x100 else None
    # Qt's other names are X's, give or take the case: "Space" is "space", "F5" is "F5".
    for name in (key, key.lower(), key.capitalize()):
        keysym = XK.string_to_keysym(name)
        if keysym != X.NoSymbol:
            return keysym, mask
    return None


def desktop_kind(platform: str, environ: Mapping[str, str]) -> str:
    """ "xcb" where keys can be taken from an X server; "wayland" in a Wayland session even when
    Qt talks to XWayland (a key grabbed there reaches us only while an X window has the focus);
    else Qt's platform name."""
    if environ.get("WAYLAND_DISPLAY") or environ.get("XDG_SESSION_TYPE") == "wayland":
        return "wayland"
    return platform


class GlobalShortcut(QObject):
    """`start(shortcut)` takes the key (replacing one taken before); `pressed` fires on the UI
    thread each time it is pressed anywhere; `problem` says why it does nothing, or is None."""

    pressed = Signal()
    changed = Signal()

    def __init__(self, platform: str, display: str | None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.platform = platform
        self.display = display
        self.shortcut = ""
        self.problem: str | None = None
        self._thread: threading.Thread | None = None
        self._wake: tuple[int, int] | None = None
        self._paused = False
        self._closed = False
        # start() runs on the io thread at start-up, and on the UI thread from Settings.
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, shortcut: str) -> str | None:
        """Take `shortcut` ("" for none); the problem, in words, when it cannot be taken. Any
        thread may call it (once `close` has been called, it takes nothing)."""
        with self._lock:
            return self._start(shortcut)

    def _start(self, shortcut: str) -> str | None:
        self._stop()
        self._paused = False
        if self._closed:
            return None
        self.shortcut = shortcut
        self.problem = self._take(shortcut) if shortcut else None
        if self.problem is not None:
            log.info("the chat shortcut %s does nothing: %s", shortcut, self.problem)
        self.changed.emit()
        return self.problem

    def _take(self, shortcut: str) -> str | None:
        if self.platform != "xcb" or not self.display:
            # Wayland (and anything that is not X11) gives no program a key of its own.
            return BIND_IT_YOURSELF
        from Xlib import X
        from Xlib import display as xdisplay
        from Xlib import error as xerror

        from tools.windows import use_poll_for_xlib

        key = x11_key(shortcut)
        if key is None:
            return f"{shortcut} is not a key this desktop knows. Choose another one."
        keysym, mask = key
        use_poll_for_xlib()
        try:
            conn = xdisplay.Display(self.display)
        except (xerror.DisplayError, OSError) as exc:
            log.warning("cannot reach the X server for the chat shortcut: %s", exc)
            return BIND_IT_YOURSELF
        keycode = conn.keysym_to_keycode(keysym)
        if not keycode:
            conn.close()
            return f"{shortcut} is not on this keyboard. Choose another key."
        root = conn.screen().root
        caught = xerror.CatchError(xerror.BadAccess)
        for extra in _lock_variants(conn):
            root.grab_key(
                keycode, mask | extra, True, X.GrabModeAsync, X.GrabModeAsync, onerror=caught
            )
        conn.sync()
        if caught.get_error() is not None:
            conn.close()
            return taken_words(shortcut)
        wake = os.pipe()
        self._wake = wake
        thread = threading.Thread(
            target=self._listen, args=(conn, keycode, wake[0]), name="chat-shortcut", daemon=True
        )
        self._thread = thread
        thread.start()
        return None

    def _listen(self, conn: object, keycode: int, wake: int) -> None:
        """On its own thread: wait for the key's presses until `stop()` writes to the pipe."""
        from Xlib import X
        from Xlib import display as xdisplay
        from Xlib import error as xerror

        assert isinstance(conn, xdisplay.Display)
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN)
        poller.register(wake, select.POLLIN)
        try:
            while True:
                # Events python-xlib already read are handled before waiting for more.
                while conn.pending_events():
                    event = conn.next_event()
                    if event.type == X.KeyPress and event.detail == keycode:
                        self.pressed.emit()
                # pending_events() reads what the server sent without waiting; poll() waits.
                if wake in [fd for fd, _ in poller.poll()]:
                    break
        except (xerror.ConnectionClosedError, OSError) as exc:
            log.warning("the chat shortcut stopped working: %s", exc)
        finally:
            # Closing the connection ends its grabs; X does that for us.
            conn.close()
            os.close(wake)

    def pause(self) -> None:
        """Give the key back for a while (the person is pressing keys to choose a new one, and
        the one in use would open the chat instead of being recorded); `resume` takes it again."""
        with self._lock:
            if self.active:
                self._stop()
                self._paused = True

    def resume(self) -> None:
        if self._paused:
            self._paused = False
            self.start(self.shortcut)

    def close(self) -> None:
        """Give the key back for good: the app is quitting (a start still on its way on the io
        thread takes nothing)."""
        with self._lock:
            self._closed = True
            self._stop()

    def stop(self) -> None:
        """Give the key back; the thread ends."""
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        thread, wake = self._thread, self._wake
        self._thread, self._wake = None, None
        if thread is None or wake is None:
            return
        os.write(wake[1], b"x")
        thread.join(5)
        os.close(wake[1])


def _lock_variants(conn: object) -> Sequence[int]:
    """The modifier states a grab must also be made for: Caps Lock and Num Lock on or off."""
    from Xlib import XK, X
    from Xlib import display as xdisplay

    assert isinstance(conn, xdisplay.Display)
    num_lock = 0
    num_code = conn.keysym_to_keycode(XK.string_to_keysym("Num_Lock"))
    for index, codes in enumerate(conn.get_modifier_mapping()):
        if num_code and num_code in codes:
            num_lock = 1 << index
    variants = {0, X.LockMask}
    if num_lock:
        variants |= {num_lock, num_lock | X.LockMask}
    return sorted(variants)


def qt_text(sequence: QKeySequence) -> str:
    """A key sequence from the editor as the setting keeps it ("Ctrl+Alt+Space"): its first
    chord only, in Qt's portable names."""
    text = sequence.toString(QKeySequence.SequenceFormat.PortableText)
    return text.split(", ")[0]
