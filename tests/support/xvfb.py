"""A real Xvfb X server for tests and benchmarks: started on a free display, killed by PID after.

    with running_xvfb(1280, 800) as server:
        win = server.show_text("Probe", "pelican 4721", at=(100, 120))
        ...  # DISPLAY=server.display

Xvfb chooses its own display number (`-displayfd`: it takes the first free one and writes it
back), so parallel runs and a developer's real display never collide. The helper then waits until
the server accepts a connection. Clients started through `spawn` are stopped before the server;
the server is stopped by its PID (SIGTERM, then SIGKILL), never by name, and never left running,
even when the test fails.

`show_text` uses xmessage (x11-utils) with a large core font (xfonts-100dpi) so OCR reads it
reliably; scripts/setup.sh installs these packages together with xvfb and evilwm.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from Xlib import X, Xatom
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.xobject.drawable import Window as XWindow

from tools.windows import use_poll_for_xlib

# This helper talks to the server through python-xlib too, from a test process that may have
# many descriptors open by the time it runs.
use_poll_for_xlib()

XVFB = shutil.which("Xvfb")
XMESSAGE = shutil.which("xmessage")
EVILWM = shutil.which("evilwm")
# Openbox minimises windows as desktops do (evilwm has no minimised state at all).
OPENBOX = shutil.which("openbox")
# Helvetica Bold, 34 pixels, from xfonts-100dpi; xmessage falls back to "fixed" without it.
BIG_FONT = "-adobe-helvetica-bold-r-normal--34-*-100-100-p-*-iso8859-1"
MEDIUM_FONT = "-adobe-helvetica-medium-r-normal--17-*-100-100-p-*-iso8859-1"


class XvfbError(RuntimeError):
    pass


@dataclass
class Window:
    id: int
    title: str
    process: subprocess.Popen[bytes]


@dataclass
class Xvfb:
    process: subprocess.Popen[bytes]
    display: str
    width: int
    height: int
    log_path: Path
    clients: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ, DISPLAY=self.display)
        env.pop("WAYLAND_DISPLAY", None)
        return env

    def connect(self) -> xdisplay.Display:
        return xdisplay.Display(self.display)

    def spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        """Start an X client on this server; it is stopped before the server is."""
        process = subprocess.Popen(
            list(argv),
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.clients.append(process)
        return process

    def start_window_manager(
        self, timeout: float = 10.0, *, openbox: bool = False
    ) -> subprocess.Popen[bytes]:
        """evilwm, a tiny EWMH window manager: it sets _NET_ACTIVE_WINDOW like a desktop's does;
        or (`openbox`) Openbox, which also minimises windows (WM_CHANGE_STATE)."""
        if openbox:
            if OPENBOX is None:
                raise XvfbError("openbox is not installed (scripts/setup.sh installs it)")
            # No session manager to register with, and no user's own configuration.
            process = self.spawn([OPENBOX, "--sm-disable", "--config-file", "/dev/null"])
        elif EVILWM is None:
            raise XvfbError("evilwm is not installed (scripts/setup.sh installs it)")
        else:
            process = self.spawn([EVILWM])
        conn = self.connect()
        try:
            check = conn.intern_atom("_NET_SUPPORTING_WM_CHECK")
            root = conn.screen().root
            deadline = time.monotonic() + timeout
            while root.get_full_property(check, X.AnyPropertyType) is None:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise XvfbError("the window manager did not start")
                time.sleep(0.02)
        finally:
            conn.close()
        return process

    def show_text(
        self,
        title: str,
        text: str,
        *,
        at: tuple[int, int] = (100, 100),
        font: str = BIG_FONT,
        timeout: float = 10.0,
    ) -> Window:
        """Show `text` in a real xmessage window titled `title`; return once it is drawn."""
        if XMESSAGE is None:
            raise XvfbError("xmessage is not installed (x11-utils; scripts/setup.sh installs it)")
        self.require_font(font)
        argv = [XMESSAGE, "-fn", font, "-title", title, "-geometry", f"+{at[0]}+{at[1]}", text]
        process = self.spawn(argv)
        window = self.wait_for_window(title, process, timeout)
        self.wait_until_drawn(window.id, timeout)
        return window

    def require_font(self, pattern: str) -> None:
        """Fail clearly when the server has no such font (xmessage would quietly use "fixed")."""
        conn = self.connect()
        try:
            if not conn.list_fonts(pattern, 1):
                raise XvfbError(f"the X server has no font {pattern} (install xfonts-100dpi)")
        finally:
            conn.close()

    def wait_for_window(
        self, title: str, process: subprocess.Popen[bytes], timeout: float = 10.0
    ) -> Window:
        """The client window titled `title`, once it is mapped and viewable."""
        conn = self.connect()
        try:
            deadline = time.monotonic() + timeout
            while True:
                found = _find_by_title(conn.screen().root, title)
                if found is not None and found.get_attributes().map_state == X.IsViewable:
                    return Window(found.id, title, process)
                if process.poll() is not None:
                    raise XvfbError(f"the client for {title!r} exited with {process.returncode}")
                if time.monotonic() > deadline:
                    raise XvfbError(f"no window titled {title!r} appeared within {timeout} s")
                time.sleep(0.02)
        finally:
            conn.close()

    def wait_until_drawn(self, window_id: int, timeout: float = 10.0) -> None:
        """Until the window shows its text: more ink than the widgets' borders alone could be.

        The server draws window borders itself as soon as a window is mapped; the text comes
        when the client handles its first Expose event, a moment later.
        """
        conn = self.connect()
        try:
            window = conn.create_resource_object("window", window_id)
            root = conn.screen().root
            deadline = time.monotonic() + timeout
            while True:
                # Read the window's pixels from the root, clipped to the screen: GetImage on a
                # window that sticks out of the screen is a BadMatch.
                size = window.get_geometry()
                at = root.translate_coords(window, 0, 0)
                left, top = max(0, at.x), max(0, at.y)
                width = min(at.x + size.width, self.width) - left
                height = min(at.y + size.height, self.height) - top
                if width > 0 and height > 0:
                    image = root.get_image(left, top, width, height, X.ZPixmap, 0xFFFFFFFF)
                    if _ink(bytes(image.data)) > 3 * (width + height):
                        return
                if time.monotonic() > deadline:
                    raise XvfbError(f"window 0x{window_id:x} was not drawn within {timeout} s")
                time.sleep(0.02)
        finally:
            conn.close()

    def stop(self) -> None:
        for client in reversed(self.clients):
            _stop(client)
        self.clients.clear()
        _stop(self.process)


def _find_by_title(window: XWindow, title: str, depth: int = 0) -> XWindow | None:
    """Depth-first search for a window whose WM_NAME is `title` (under frames too), or whose
    UTF-8 _NET_WM_NAME is: Qt writes titles beyond Latin-1 there, with " — <application>" added
    (a dialog titled "Memory passphrase" is "Memory passphrase — Chamberlain" there)."""
    with suppress(xerror.XError):
        name = window.get_full_property(Xatom.WM_NAME, X.AnyPropertyType)
        if name is not None and bytes(name.value).decode("latin-1") == title:
            return window
        net_name = window.get_full_property(
            window.display.get_atom("_NET_WM_NAME"), X.AnyPropertyType
        )
        if net_name is not None:
            text = bytes(net_name.value).decode("utf-8", "replace")
            if text == title or text.startswith(f"{title} — "):
                return window
        if depth < 3:
            for child in window.query_tree().children:
                found = _find_by_title(child, title, depth + 1)
                if found is not None:
                    return found
    return None


def _ink(pixels: bytes) -> int:
    """How many 32-bit pixels differ from the most common one (the background)."""
    values = memoryview(pixels).cast("I")
    counts = Counter(values)
    return len(values) - counts.most_common(1)[0][1] if counts else 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 5 s, by PID; reaped either way."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def _read_display_number(fd: int, process: subprocess.Popen[bytes], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    data = b""
    # poll(), not select(): a long test session may have more than 1024 descriptors open.
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or process.poll() is not None:
            raise XvfbError("Xvfb did not report its display number")
        if poller.poll(min(remaining, 0.2) * 1000):
            chunk = os.read(fd, 64)
            if not chunk:
                raise XvfbError("Xvfb closed its display pipe without a display number")
            data += chunk
    return int(data.strip())


def _wait_accepting(display: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            xdisplay.Display(display).close()
            return
        except (xerror.DisplayError, OSError):
            if process.poll() is not None or time.monotonic() > deadline:
                raise XvfbError(f"Xvfb on {display} does not accept connections") from None
            time.sleep(0.02)


@contextmanager
def running_xvfb(
    width: int = 1280, height: int = 800, depth: int = 24, timeout: float = 15.0
) -> Iterator[Xvfb]:
    """A fresh Xvfb of `width`×`height`; stopped (with its clients) when the block ends."""
    if XVFB is None:
        raise XvfbError("Xvfb is not installed (scripts/setup.sh installs the xvfb package)")
    log_fd, log_name = tempfile.mkstemp(prefix="chamberlain-xvfb-", suffix=".log")
    read_fd, write_fd = os.pipe()
    argv = [
        XVFB, "-displayfd", str(write_fd), "-screen", "0", f"{width}x{height}x{depth}",
        "-nolisten", "tcp", "-noreset",
    ]  # fmt: skip
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            pass_fds=(write_fd,),
        )
    finally:
        os.close(write_fd)
        os.close(log_fd)
    server: Xvfb | None = None
    try:
        number = _read_display_number(read_fd, process, timeout)
        server = Xvfb(process, f":{number}", width, height, Path(log_name))
        _wait_accepting(server.display, process, timeout)
        yield server
    except XvfbError as exc:
        detail = Path(log_name).read_text(errors="replace")[-2000:]
        raise XvfbError(f"{exc}\n--- Xvfb log ---\n{detail}") from None
    finally:
        os.close(read_fd)
        if server is not None:
            server.stop()
        else:
            _stop(process)
        with suppress(OSError):
            os.unlink(log_name)
